package xmltree

import (
	"strings"
	"testing"
)

func TestParseWalk(t *testing.T) {
	root := Parse(t, []byte(`<html><body><svg><text x="1" class="cp">a</text><g><text x="2">b</text></g></svg><p>c</p></body></html>`))
	texts := root.All("text")
	if len(texts) != 2 || texts[0].Text != "a" || texts[1].Attr("x") != "2" || texts[0].Attr("class") != "cp" || texts[1].Attr("class") != "" {
		t.Errorf("texts %+v", texts)
	}
	if ps := root.All("p"); len(ps) != 1 || strings.TrimSpace(ps[0].Text) != "c" {
		t.Errorf("p %+v", ps)
	}
}

func TestParseRejectsMalformed(t *testing.T) {
	ft := &fakeTB{TB: t}
	func() {
		defer func() { recover() }()
		Parse(ft, []byte(`<html><body></html>`))
	}()
	if !ft.failed {
		t.Error("a page with an unclosed element parsed")
	}
}

type fakeTB struct {
	testing.TB
	failed bool
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(string, ...any) {
	f.failed = true
	panic("fatal")
}
