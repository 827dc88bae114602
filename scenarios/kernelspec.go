package scenarios

import (
	"fmt"
	"strings"
)

// KernelSpecHelp describes ParseKernelSpec's syntax (for flag help and
// errors).
const KernelSpecHelp = "LABEL=debian:6.1, LABEL=image=PATH[,modules=DIR], LABEL=tree=PATH[,ref=REF][,patches=GLOB]...[,config=FRAGMENT], LABEL=source=debian:6.1[,patches=series:NAME]...[,config=FRAGMENT][,build=auto|full|modules] or LABEL=running"

// ParseKernelSpec parses a kernel given on the command line
// (`run --kernel LABEL=SPEC`):
//
//	stock=debian:6.1                         a Debian kernel (also debian=6.1)
//	patched=image=/path/bzImage,modules=DIR  a built kernel and its modules
//	patched=tree=~/linux,ref=net-next/main,patches=~/v7/*.patch,config=frag.config
//	patched=source=debian:6.1,patches=series:tun-backpressure
//	                                         Debian's linux-source-6.1, built
//	host=running                             the running kernel
//
// patches= may repeat; paths cannot contain commas. Paths are returned as
// written (the caller resolves them); no file is looked at.
func ParseKernelSpec(s string) (Kernel, error) {
	bad := func(format string, a ...any) (Kernel, error) {
		return Kernel{}, &Error{Msg: fmt.Sprintf("--kernel %q: ", s) + fmt.Sprintf(format, a...) + "; use " + KernelSpecHelp}
	}
	label, spec, ok := strings.Cut(s, "=")
	if !ok || label == "" || spec == "" {
		return bad("want LABEL=SPEC")
	}
	if msg := checkLabel(label); msg != "" {
		return bad("%s", msg)
	}
	k := Kernel{Label: label}
	switch {
	case spec == "running":
		return k, nil
	case strings.HasPrefix(spec, "debian:"):
		k.Debian = strings.TrimPrefix(spec, "debian:")
		if msg := checkDebian(k.Debian); msg != "" {
			return bad("%s", msg)
		}
		return k, nil
	}
	seen := map[string]bool{}
	for _, kv := range strings.Split(spec, ",") {
		key, val, ok := strings.Cut(kv, "=")
		if !ok || val == "" {
			return bad("%q is not KEY=VALUE", kv)
		}
		if seen[key] && key != "patches" {
			return bad("%s given twice", key)
		}
		seen[key] = true
		switch key {
		case "image":
			k.Image = val
		case "modules":
			k.Modules = val
		case "debian":
			if msg := checkDebian(val); msg != "" {
				return bad("%s", msg)
			}
			k.Debian = val
		case "tree":
			k.Tree = val
		case "source":
			if msg := checkSource(val); msg != "" {
				return bad("%s", msg)
			}
			k.Source = val
		case "ref":
			if msg := checkRef(val); msg != "" {
				return bad("%s", msg)
			}
			k.Ref = val
		case "patches", "patch":
			if msg := checkPatchPath(val, key); msg != "" {
				return bad("%s", msg)
			}
			k.Patches = append(k.Patches, val)
		case "config":
			k.Config = val
		case "build":
			if val != BuildAuto && val != BuildFull && val != BuildModules {
				return bad("build=%s: use build=auto, build=full or build=modules", val)
			}
			k.Build = val
		default:
			return bad("unknown key %q", key)
		}
	}
	if _, msg := kernelProblem(k); msg != "" {
		return bad("%s", msg)
	}
	if k.Running() {
		return bad("name an image, a Debian version or a tree")
	}
	return k, nil
}

// SetKernels replaces the scenario's kernels (the column axis), e.g. with
// the ones given on the command line. Labels must differ.
func (s *Scenario) SetKernels(ks []Kernel) error {
	if len(ks) == 0 {
		return nil
	}
	if len(ks) > maxKernels {
		return &Error{Msg: fmt.Sprintf("%d kernels; at most %d", len(ks), maxKernels)}
	}
	seen := map[string]bool{}
	for _, k := range ks {
		if seen[k.Label] {
			return &Error{Msg: fmt.Sprintf("--kernel: label %q given twice; labels name table columns and must differ", k.Label)}
		}
		seen[k.Label] = true
		if _, msg := kernelProblem(k); msg != "" {
			return &Error{Msg: fmt.Sprintf("kernel %s: %s", k.Label, msg)}
		}
	}
	s.Kernels = append([]Kernel(nil), ks...)
	return nil
}

// Spec is k as ParseKernelSpec reads it (LABEL=SPEC): the command line
// that gives the same kernel again, e.g. to the run inside a lab VM.
func (k Kernel) Spec() string {
	switch {
	case k.Running():
		return k.Label + "=running"
	case k.Debian != "" && k.Image == "" && k.Modules == "" && !k.Builds():
		return k.Label + "=debian:" + k.Debian
	}
	var kv []string
	add := func(key, v string) {
		if v != "" {
			kv = append(kv, key+"="+v)
		}
	}
	add("image", k.Image)
	add("modules", k.Modules)
	add("debian", k.Debian)
	add("tree", k.Tree)
	add("source", k.Source)
	add("ref", k.Ref)
	for _, p := range k.Patches {
		add("patches", p)
	}
	add("config", k.Config)
	return k.Label + "=" + strings.Join(kv, ",")
}
