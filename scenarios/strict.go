package scenarios

import (
	"bytes"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"sync"

	"go.yaml.in/yaml/v3"
)

// The schema walker (decoder) is the primary check: it knows every key and
// value and reports file:line:col with a suggestion. As a second, independent
// check the file is also decoded by yaml.v3 with KnownFields(true) into a
// "shape" type built from the same schema, where every leaf is a yaml.Node:
// yaml.v3 itself then rejects any key the schema does not have.

var nodeType = reflect.TypeOf(yaml.Node{})

// shapeOf builds the shape type of struct type t: same YAML keys, leaves
// as yaml.Node, nested mappings as pointers to their shapes.
func shapeOf(t reflect.Type) reflect.Type {
	var sfs []reflect.StructField
	for i, f := range fieldsOf(t) {
		ft := f.sf.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		typ := nodeType // scalars, axis lists, kernel lists
		if ft.Kind() == reflect.Struct && ft != durationType {
			typ = reflect.PointerTo(shapeOf(ft))
		}
		sfs = append(sfs, reflect.StructField{
			Name: "F" + strconv.Itoa(i),
			Type: typ,
			Tag:  reflect.StructTag(`yaml:"` + f.key + `"`),
		})
	}
	return reflect.StructOf(sfs)
}

var documentShape = sync.OnceValue(func() reflect.Type { return shapeOf(reflect.TypeOf(document{})) })

var yamlLineRE = regexp.MustCompile(`line (\d+): (.*)`)

// strictDecode decodes data with yaml.v3's KnownFields(true) into the
// document shape.
func strictDecode(file string, data []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	v := reflect.New(documentShape())
	if err := dec.Decode(v.Interface()); err != nil {
		e := &Error{File: file, Msg: fmt.Sprintf("strict YAML decoding: %v", err)}
		if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
			e.Line, _ = strconv.Atoi(m[1])
			e.Msg = "strict YAML decoding: " + m[2]
		}
		return e
	}
	return nil
}
