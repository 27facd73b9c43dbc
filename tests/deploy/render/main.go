// render prints a chart's manifests the way `helm template` does, for checks on machines without
// Helm: Go's text/template with sprig's functions and Helm's own (funcs.go), the built-in objects
// (.Values, .Release, .Chart, .Capabilities, .Files, .Template) and Helm's merging of values files.
// It does not validate values.schema.json; the checks that call it do that first.
//
//	render -chart DIR [-f values.yaml]... [-api-versions GROUP/VERSION]... [-notes] [-strict]
package main

import (
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"text/template"
)

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// APIVersions answers .Capabilities.APIVersions.Has.
type APIVersions []string

func (a APIVersions) Has(v string) bool {
	for _, x := range a {
		if x == v {
			return true
		}
	}
	return false
}

type KubeVersion struct{ Version, Major, Minor string }

func (k KubeVersion) String() string { return k.Version }

type Capabilities struct {
	APIVersions APIVersions
	KubeVersion KubeVersion
}

// Files is .Files: the chart's files outside templates/, read by path relative to the chart.
type Files struct{ root string }

func (f Files) GetBytes(name string) []byte {
	clean := path.Clean(name)
	if path.IsAbs(clean) || strings.HasPrefix(clean, "..") || strings.HasPrefix(clean, "templates/") {
		return nil
	}
	data, err := os.ReadFile(filepath.Join(f.root, filepath.FromSlash(clean)))
	if err != nil {
		return nil
	}
	return data
}

func (f Files) Get(name string) string { return string(f.GetBytes(name)) }

// The kinds Kubernetes needs first come first, as Helm orders its output.
var installOrder = []string{
	"Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange", "PodDisruptionBudget",
	"ServiceAccount", "Secret", "ConfigMap", "StorageClass", "PersistentVolume",
	"PersistentVolumeClaim", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding",
	"Role", "RoleBinding", "Service", "DaemonSet", "Pod", "ReplicaSet", "Deployment",
	"HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob", "Ingress",
}

var (
	docSeparator = regexp.MustCompile(`(?m)^---\s*$`)
	kindLine     = regexp.MustCompile(`(?m)^kind:\s*(\S+)`)
	hookLine     = regexp.MustCompile(`(?m)^\s+["']?helm\.sh/hook["']?\s*:`)
)

// A hook (a helm.sh/hook annotation, as the test pods carry) is no part of the release's
// manifest; helm template prints the hooks after it, and so does render.
type manifest struct {
	source, body string
	order        int
	hook         bool
}

func kindRank(body string) int {
	if m := kindLine.FindStringSubmatch(body); m != nil {
		for i, k := range installOrder {
			if k == m[1] {
				return i
			}
		}
	}
	return len(installOrder)
}

func main() {
	var valueFiles, apiVersions, objectFiles listFlag
	chartDir := flag.String("chart", "", "chart directory")
	release := flag.String("name", "gradsync", "release name")
	namespace := flag.String("namespace", "default", "release namespace")
	kubeVersion := flag.String("kube-version", "v1.29.0", "Kubernetes version for .Capabilities")
	notes := flag.Bool("notes", false, "print the rendered NOTES.txt instead of the manifests")
	strict := flag.Bool("strict", false, "fail on a reference to a missing key (like helm lint --strict)")
	flag.Var(&valueFiles, "f", "values file merged over values.yaml (repeatable)")
	flag.Var(&apiVersions, "api-versions", "extra API version for .Capabilities (repeatable)")
	flag.Var(&objectFiles, "object", "YAML file of an object in the cluster, for lookup (repeatable)")
	flag.Parse()
	if *chartDir == "" {
		fmt.Fprintln(os.Stderr, "usage: render -chart DIR [-f values.yaml]... [-api-versions V]... [-object FILE]... [-notes] [-strict]")
		os.Exit(2)
	}
	var objects []map[string]interface{}
	for _, f := range objectFiles {
		o, err := loadValuesFile(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, "Error:", err)
			os.Exit(1)
		}
		objects = append(objects, o)
	}
	if err := run(*chartDir, *release, *namespace, *kubeVersion, valueFiles, apiVersions, objects, *notes, *strict); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", helmMessage(err))
		os.Exit(1)
	}
}

var (
	errorLocation = regexp.MustCompile(`^template: (\S+?:\d+:\d+): `)
	errorCall     = regexp.MustCompile(`error calling \w+: `)
)

// helmMessage shortens a template execution error to Helm's form: where the outermost template
// failed, then the innermost message (a `required` or `fail` text is shown as written).
func helmMessage(err error) string {
	msg := err.Error()
	loc := errorLocation.FindStringSubmatch(msg)
	calls := errorCall.FindAllStringIndex(msg, -1)
	if loc == nil || calls == nil {
		return msg
	}
	return fmt.Sprintf("execution error at (%s): %s", loc[1], msg[calls[len(calls)-1][1]:])
}

func run(chartDir, release, namespace, kubeVersion string, valueFiles, apiVersions []string,
	objects []map[string]interface{}, notes, strict bool) error {
	chart, err := loadChart(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		return err
	}
	values, err := loadValuesFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		return err
	}
	for _, f := range valueFiles {
		override, err := loadValuesFile(f)
		if err != nil {
			return err
		}
		values = coalesce(values, override)
	}
	parts := strings.SplitN(strings.TrimPrefix(kubeVersion, "v"), ".", 3)
	if len(parts) < 2 {
		return fmt.Errorf("kube-version %q: want vMAJOR.MINOR.PATCH", kubeVersion)
	}
	builtin := APIVersions{"v1", "apps/v1", "batch/v1", "policy/v1", "networking.k8s.io/v1",
		"rbac.authorization.k8s.io/v1", "storage.k8s.io/v1", "autoscaling/v2"}
	top := map[string]interface{}{
		"Values": values,
		"Chart":  chart,
		"Release": map[string]interface{}{
			"Name": release, "Namespace": namespace, "Service": "Helm",
			"IsInstall": true, "IsUpgrade": false, "Revision": 1,
		},
		"Capabilities": Capabilities{
			APIVersions: append(builtin, apiVersions...),
			KubeVersion: KubeVersion{Version: "v" + strings.TrimPrefix(kubeVersion, "v"), Major: parts[0], Minor: parts[1]},
		},
		"Files": Files{root: chartDir},
	}

	var root *template.Template
	root = template.New(chart.Name).Funcs(funcMap(&root, objects))
	if strict {
		root.Option("missingkey=error")
	} else {
		root.Option("missingkey=zero")
	}
	var names []string
	templatesDir := filepath.Join(chartDir, "templates")
	err = filepath.WalkDir(templatesDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(templatesDir, p)
		name := path.Join(chart.Name, "templates", filepath.ToSlash(rel))
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if _, err := root.New(name).Parse(string(data)); err != nil {
			return err
		}
		names = append(names, name)
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(names)

	render := func(name string) (string, error) {
		data := make(map[string]interface{}, len(top)+1)
		for k, v := range top {
			data[k] = v
		}
		data["Template"] = map[string]interface{}{"Name": name, "BasePath": path.Join(chart.Name, "templates")}
		var buf strings.Builder
		if err := root.ExecuteTemplate(&buf, name, data); err != nil {
			return "", err
		}
		return strings.ReplaceAll(buf.String(), "<no value>", ""), nil
	}

	notesName := path.Join(chart.Name, "templates", "NOTES.txt")
	if notes {
		out, err := render(notesName)
		if err != nil {
			return err
		}
		fmt.Print(out)
		return nil
	}
	var manifests []manifest
	for _, name := range names {
		if name == notesName || strings.HasPrefix(path.Base(name), "_") {
			continue
		}
		out, err := render(name)
		if err != nil {
			return err
		}
		for _, doc := range docSeparator.Split(out, -1) {
			if body := strings.TrimSpace(doc); body != "" {
				manifests = append(manifests, manifest{source: name, body: body, order: kindRank(body), hook: hookLine.MatchString(body)})
			}
		}
	}
	sort.SliceStable(manifests, func(i, j int) bool {
		if manifests[i].hook != manifests[j].hook {
			return !manifests[i].hook
		}
		return manifests[i].order < manifests[j].order
	})
	for _, m := range manifests {
		fmt.Printf("---\n# Source: %s\n%s\n", m.source, m.body)
	}
	return nil
}
