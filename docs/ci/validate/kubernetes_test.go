package validate

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// k8sDocs splits a multi-document YAML file and decodes each document
// strictly (unknown or duplicate fields are errors, and every value must
// fit its field's type) into the k8s.io/api type its apiVersion and kind
// name: the API server's own Go types, pinned in go.mod.
func k8sDocs(t *testing.T, b []byte) (jobs []*batchv1.Job, pvcs []*corev1.PersistentVolumeClaim, err error) {
	t.Helper()
	for _, doc := range bytes.Split(b, []byte("\n---\n")) {
		var meta struct{ APIVersion, Kind string }
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return nil, nil, err
		}
		switch meta.APIVersion + " " + meta.Kind {
		case "batch/v1 Job":
			j := &batchv1.Job{}
			if err := yaml.UnmarshalStrict(doc, j); err != nil {
				return nil, nil, err
			}
			jobs = append(jobs, j)
		case "v1 PersistentVolumeClaim":
			p := &corev1.PersistentVolumeClaim{}
			if err := yaml.UnmarshalStrict(doc, p); err != nil {
				return nil, nil, err
			}
			pvcs = append(pvcs, p)
		default:
			t.Fatalf("unexpected document %s %s", meta.APIVersion, meta.Kind)
		}
	}
	return jobs, pvcs, nil
}

// The shard Job is an Indexed Job of privileged pods, one per node, whose
// count vnetbench is told (VNETBENCH_SHARD_TOTAL = completions), running
// 'vnetbench run --shard auto --seed auto' (the seed from the Job's uid)
// into the shared volume; the merge Job reads
// that volume and merges, reports, gates and records.
func TestKubernetesJobs(t *testing.T) {
	jobs, pvcs, err := k8sDocs(t, readRecipe(t, "kubernetes/shards.yaml"))
	if err != nil || len(jobs) != 1 || len(pvcs) != 1 {
		t.Fatalf("shards.yaml: %d jobs, %d claims, %v", len(jobs), len(pvcs), err)
	}
	j, claim := jobs[0], pvcs[0].Name
	s := j.Spec
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion || s.Completions == nil || s.Parallelism == nil || *s.Parallelism != *s.Completions {
		t.Fatalf("shard Job spec %+v: want Indexed, parallelism = completions", s)
	}
	pod := s.Template.Spec
	c := pod.Containers[0]
	total, pipeline := "", ""
	for _, e := range c.Env {
		if e.Name == "VNETBENCH_SHARD_TOTAL" {
			total = e.Value
		}
		if e.Name == "VNETBENCH_PIPELINE_ID" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			pipeline = e.ValueFrom.FieldRef.FieldPath
		}
	}
	// --seed auto: every pod of the Job, and only those, share its uid.
	if want := "metadata.labels['" + batchv1.ControllerUidLabel + "']"; pipeline != want {
		t.Errorf("VNETBENCH_PIPELINE_ID from %q, want the Job's uid (%s)", pipeline, want)
	}
	if want := itoa(*s.Completions); total != want {
		t.Errorf("VNETBENCH_SHARD_TOTAL %q, want the Job's completions %s", total, want)
	}
	if c.SecurityContext == nil || c.SecurityContext.Privileged == nil || !*c.SecurityContext.Privileged {
		t.Errorf("shard container not privileged: %+v", c.SecurityContext)
	}
	if cmd := strings.Join(append(c.Command, c.Args...), " "); !strings.Contains(cmd, "vnetbench run") || !strings.Contains(cmd, "--shard auto --seed auto") ||
		!strings.Contains(cmd, "/runs/incoming/shard-$JOB_COMPLETION_INDEX") {
		t.Errorf("shard command %q", cmd)
	}
	aa := pod.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if len(aa) != 1 || aa[0].TopologyKey != "kubernetes.io/hostname" || aa[0].LabelSelector.MatchLabels["app"] != s.Template.Labels["app"] {
		t.Errorf("anti-affinity %+v: want one shard pod per node", aa)
	}
	if pod.RestartPolicy != corev1.RestartPolicyNever || pod.Volumes[0].PersistentVolumeClaim.ClaimName != claim {
		t.Errorf("pod spec %+v", pod)
	}

	jobs, _, err = k8sDocs(t, readRecipe(t, "kubernetes/merge.yaml"))
	if err != nil || len(jobs) != 1 {
		t.Fatalf("merge.yaml: %d jobs, %v", len(jobs), err)
	}
	m := jobs[0].Spec.Template.Spec
	script := strings.Join(m.Containers[0].Args, "\n")
	for _, want := range []string{`vnetbench merge /runs/incoming/shard-* -o "$run"`, "vnetbench report", "vnetbench compare", "--junit", "vnetbench history add"} {
		if !strings.Contains(script, want) {
			t.Errorf("merge script lacks %q:\n%s", want, script)
		}
	}
	if m.Volumes[0].PersistentVolumeClaim.ClaimName != claim || m.Containers[0].VolumeMounts[0].MountPath != c.VolumeMounts[0].MountPath {
		t.Errorf("merge Job does not mount the shards' volume %s at %s", claim, c.VolumeMounts[0].MountPath)
	}
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

// Strict decoding catches what the API server refuses (so the decoding
// above is a real check): a misspelled field, a value of the wrong type, a
// duplicated key. The values of string fields (completionMode, say) are
// the server's to check: TestKubernetesJobs checks those the recipe
// depends on.
func TestKubernetesStrictCatches(t *testing.T) {
	b := readRecipe(t, "kubernetes/shards.yaml")
	for _, tc := range []struct{ old, new string }{
		{"completionMode: Indexed", "completionsMode: Indexed"},
		{"parallelism: 4", "parallelism: four"},
		{"privileged: true", "privileged: yes please"},
		{"      restartPolicy: Never", "      restartPolicy: Never\n      restartPolicy: Never"},
	} {
		mut := bytes.Replace(b, []byte(tc.old), []byte(tc.new), 1)
		if bytes.Equal(mut, b) {
			t.Fatalf("%q is not in the file", tc.old)
		}
		if _, _, err := k8sDocs(t, mut); err == nil {
			t.Errorf("strict decoding accepted %q -> %q", tc.old, tc.new)
		}
	}
}
