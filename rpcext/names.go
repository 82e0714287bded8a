package rpcext

import "sort"

// MethodNames returns every method the server answers, over HTTP and
// websockets (websocket-only ones included), sorted.
func MethodNames() []string {
	seen := make(map[string]bool, len(methods)+len(wsMethods))
	var out []string
	for name := range methods {
		seen[name] = true
		out = append(out, name)
	}
	for name := range wsMethods {
		if !seen[name] {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}
