// Package netparams gives each chain its own copy of a network's parameters.
package netparams

import "github.com/btcsuite/btcd/chaincfg/v2"

// Own returns a copy of p whose deployment starters and enders are private
// to the copy: btcd points their clocks at the chain it is opened with, so
// chains of one process sharing chaincfg's globals would read each other's
// clocks (and race on them).
func Own(p *chaincfg.Params) *chaincfg.Params {
	c := *p
	for i := range c.Deployments {
		d := &c.Deployments[i]
		if s, ok := d.DeploymentStarter.(*chaincfg.MedianTimeDeploymentStarter); ok {
			d.DeploymentStarter = chaincfg.NewMedianTimeDeploymentStarter(s.StartTime())
		}
		if e, ok := d.DeploymentEnder.(*chaincfg.MedianTimeDeploymentEnder); ok {
			d.DeploymentEnder = chaincfg.NewMedianTimeDeploymentEnder(e.EndTime())
		}
	}
	return &c
}
