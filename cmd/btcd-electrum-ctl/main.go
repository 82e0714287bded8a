// Command btcd-electrum-ctl sends JSON-RPC commands to a btcd-electrum node:
// btcd's commands (as btcctl) and the node's Electrum commands
// (getelectruminfo, getelectrumsessions, disconnectelectrumsession,
// getscripthashinfo, reloadelectrumtls). It takes btcctl's flags and reads
// ~/.btcd-electrum-ctl/btcd-electrum-ctl.conf, or the RPC credentials from
// the node's own config file.
//
//	btcd-electrum-ctl --regtest --notls getelectrumsessions
//	btcd-electrum-ctl getscripthashinfo bc1q...
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/btcsuite/btcd/btcjson"
	flags "github.com/jessevdk/go-flags"

	// Registers the node's Electrum commands with btcjson.
	"github.com/btcd-electrum/btcd-electrum/rpcext"
)

// version is shown by --version.
const version = "0.1.0"

// unusableFlags mark commands that need a websocket connection.
const unusableFlags = btcjson.UFWebsocketOnly | btcjson.UFNotification

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// run sends the command named in args and prints its result to out.
func run(args []string, in io.Reader, out io.Writer) error {
	cfg, rest, err := loadConfig(args)
	if err != nil {
		var fe *flags.Error
		if errors.As(err, &fe) && fe.Type == flags.ErrHelp {
			fmt.Fprintln(out, err)
			fmt.Fprintln(out, "\nUsage: btcd-electrum-ctl [options] <command> <args...>\nThe commands are listed by -l.")
			return nil
		}
		return err
	}
	if cfg.ShowVersion {
		fmt.Fprintln(out, "btcd-electrum-ctl version", version)
		return nil
	}
	if cfg.ListCommands {
		listCommands(out)
		return nil
	}
	if len(rest) == 0 {
		return errors.New("no command given: btcd-electrum-ctl [options] <command> <args...> (-l lists the commands)")
	}
	method := rest[0]
	usage, err := btcjson.MethodUsageFlags(method)
	if err != nil {
		return fmt.Errorf("unrecognized command %q (-l lists the commands)", method)
	}
	if usage&unusableFlags != 0 {
		return fmt.Errorf("%s can only be used over a websocket connection", method)
	}
	params, err := readParams(rest[1:], in)
	if err != nil {
		return err
	}
	cmd, err := btcjson.NewCmd(method, params...)
	if err != nil {
		var je btcjson.Error
		if errors.As(err, &je) {
			text, _ := btcjson.MethodUsageText(method)
			return fmt.Errorf("%s: %v\nUsage: %s", method, je, text)
		}
		return err
	}
	body, err := btcjson.MarshalCmd(btcjson.RpcVersion1, 1, cmd)
	if err != nil {
		return err
	}
	result, err := sendRequest(cfg, body)
	if err != nil {
		return err
	}
	return printResult(out, result)
}

// readParams returns the parameters as strings (btcjson converts them to
// each parameter's type); "-" reads one parameter from in, as btcctl does.
func readParams(args []string, in io.Reader) ([]any, error) {
	params := make([]any, 0, len(args))
	var stdin *bufio.Reader
	for _, a := range args {
		if a != "-" {
			params = append(params, a)
			continue
		}
		if stdin == nil {
			stdin = bufio.NewReader(in)
		}
		line, err := stdin.ReadString('\n')
		if err != nil && (err != io.EOF || line == "") {
			return nil, fmt.Errorf("reading a parameter from stdin: %w", err)
		}
		params = append(params, strings.TrimRight(line, "\r\n"))
	}
	return params, nil
}

// printResult prints a string result as it is and anything else as
// indented JSON; a null result prints nothing.
func printResult(out io.Writer, result json.RawMessage) error {
	if len(result) == 0 || string(result) == "null" {
		return nil
	}
	var s string
	if json.Unmarshal(result, &s) == nil {
		_, err := fmt.Fprintln(out, s)
		return err
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, result, "", "  "); err != nil {
		return err
	}
	buf.WriteByte('\n')
	_, err := out.Write(buf.Bytes())
	return err
}

// listCommands prints every command the node serves over HTTP, sorted, with
// its usage. btcjson also knows the wallet's commands and bitcoind's, which
// the node answers with an error.
func listCommands(out io.Writer) {
	for _, m := range rpcext.MethodNames() {
		flags, err := btcjson.MethodUsageFlags(m)
		if err != nil || flags&unusableFlags != 0 {
			continue
		}
		usage, err := btcjson.MethodUsageText(m)
		if err != nil {
			usage = m
		}
		fmt.Fprintln(out, usage)
	}
}
