// Package xmltree parses a well-formed XML page (history's HTML page is
// written in XHTML syntax) into a tree that tests walk without a browser:
// encoding/xml builds the tree a browser's parser would.
package xmltree

import (
	"bytes"
	"encoding/xml"
	"testing"
)

// Node is an element with its attributes, children and text.
type Node struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Nodes   []Node     `xml:",any"`
	Text    string     `xml:",chardata"`
}

// Attr is the value of n's attribute name, or "".
func (n *Node) Attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// All is n's descendants named name, in document order.
func (n *Node) All(name string) []*Node {
	var out []*Node
	for i := range n.Nodes {
		c := &n.Nodes[i]
		if c.XMLName.Local == name {
			out = append(out, c)
		}
		out = append(out, c.All(name)...)
	}
	return out
}

// Parse parses page strictly, failing tb when it is not well-formed.
func Parse(tb testing.TB, page []byte) *Node {
	tb.Helper()
	var root Node
	d := xml.NewDecoder(bytes.NewReader(page))
	d.Strict = true
	if err := d.Decode(&root); err != nil {
		tb.Fatalf("the page does not parse: %v", err)
	}
	return &root
}
