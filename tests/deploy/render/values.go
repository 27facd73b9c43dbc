package main

import (
	"encoding/json"
	"fmt"
	"os"

	yaml "gopkg.in/yaml.v2"
)

// Chart mirrors the Chart.yaml fields a template can read, capitalised as Helm exposes them.
type Chart struct {
	APIVersion  string            `yaml:"apiVersion"`
	Name        string            `yaml:"name"`
	Version     string            `yaml:"version"`
	AppVersion  string            `yaml:"appVersion"`
	KubeVersion string            `yaml:"kubeVersion"`
	Description string            `yaml:"description"`
	Type        string            `yaml:"type"`
	Home        string            `yaml:"home"`
	Sources     []string          `yaml:"sources"`
	Keywords    []string          `yaml:"keywords"`
	Icon        string            `yaml:"icon"`
	Annotations map[string]string `yaml:"annotations"`
	Maintainers []struct {
		Name  string `yaml:"name"`
		Email string `yaml:"email"`
		URL   string `yaml:"url"`
	} `yaml:"maintainers"`
}

func loadChart(path string) (*Chart, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Chart
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if c.APIVersion != "v2" || c.Name == "" || c.Version == "" {
		return nil, fmt.Errorf("%s: apiVersion v2, name and version are required", path)
	}
	return &c, nil
}

// parseYAML decodes one YAML document into the types Helm hands to templates: Helm reads YAML by
// converting it to JSON, so maps have string keys and every number is a float64.
func parseYAML(data []byte) (interface{}, error) {
	var raw interface{}
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return nil, err
	}
	encoded, err := json.Marshal(stringKeys(raw))
	if err != nil {
		return nil, err
	}
	var out interface{}
	if err := json.Unmarshal(encoded, &out); err != nil {
		return nil, err
	}
	return out, nil
}

func stringKeys(v interface{}) interface{} {
	switch t := v.(type) {
	case map[interface{}]interface{}:
		m := make(map[string]interface{}, len(t))
		for k, val := range t {
			m[fmt.Sprint(k)] = stringKeys(val)
		}
		return m
	case []interface{}:
		for i := range t {
			t[i] = stringKeys(t[i])
		}
	}
	return v
}

func loadValuesFile(path string) (map[string]interface{}, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	v, err := parseYAML(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if v == nil {
		return map[string]interface{}{}, nil
	}
	m, ok := v.(map[string]interface{})
	if !ok {
		return nil, fmt.Errorf("%s: values must be a mapping", path)
	}
	return m, nil
}

// coalesce merges override onto base the way Helm merges -f files: maps merge key by key, other
// values replace, and a null removes the key.
func coalesce(base, override map[string]interface{}) map[string]interface{} {
	out := make(map[string]interface{}, len(base))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range override {
		if v == nil {
			delete(out, k)
			continue
		}
		bm, baseIsMap := out[k].(map[string]interface{})
		om, overrideIsMap := v.(map[string]interface{})
		if baseIsMap && overrideIsMap {
			out[k] = coalesce(bm, om)
		} else {
			out[k] = v
		}
	}
	return out
}
