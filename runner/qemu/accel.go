package qemu

import (
	"os"

	"github.com/vnetbench/vnetbench/internal/fault"
)

// VhostNetPath is the vhost-net device node.
const VhostNetPath = "/dev/vhost-net"

// CheckVhost refuses a config that asks for vhost=on when /dev/vhost-net
// does not exist: QEMU 7.2 would print a warning and then abort with an
// assertion (exit 134).
func CheckVhost(c Config) error { return checkVhost(c, VhostNetPath) }

func checkVhost(c Config, dev string) error {
	need := false
	for _, n := range c.NICs {
		need = need || n.Vhost
	}
	if !need {
		return nil
	}
	if _, err := os.Stat(dev); err != nil {
		return fault.Capability("backend tap+vhost needs %s, which this kernel does not provide "+
			"(QEMU would abort with an assertion); run 'vnetbench doctor', use backend: tap, "+
			"or run the scenario on a VM-hosted kernel that has vhost_net (lab mode)", dev)
	}
	return nil
}
