// Package vmimages builds reproducible, content-addressed guest images
// (kernel + initramfs with the vnetbench agent as /init) and holds the guest
// side of the agent protocol.
package vmimages
