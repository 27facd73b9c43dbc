package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig"
	yaml "gopkg.in/yaml.v2"
)

// funcMap is sprig's text functions with Helm's own added and the ones Helm removes taken out.
// root is the template set that include and tpl execute in; it is filled in after parsing.
// objects are the cluster's objects that lookup finds, as on an upgrade.
func funcMap(root **template.Template, objects []map[string]interface{}) template.FuncMap {
	f := sprig.TxtFuncMap()
	delete(f, "env")
	delete(f, "expandenv")

	f["include"] = func(name string, data interface{}) (string, error) {
		var buf strings.Builder
		if err := (*root).ExecuteTemplate(&buf, name, data); err != nil {
			return "", err
		}
		return buf.String(), nil
	}
	f["tpl"] = func(text string, data interface{}) (string, error) {
		t, err := (*root).Clone()
		if err != nil {
			return "", err
		}
		t, err = t.New("tpl").Parse(text)
		if err != nil {
			return "", err
		}
		var buf strings.Builder
		if err := t.Execute(&buf, data); err != nil {
			return "", err
		}
		return strings.ReplaceAll(buf.String(), "<no value>", ""), nil
	}
	f["required"] = func(msg string, v interface{}) (interface{}, error) {
		if v == nil {
			return nil, errors.New(msg)
		}
		if s, ok := v.(string); ok && s == "" {
			return nil, errors.New(msg)
		}
		return v, nil
	}
	f["fail"] = func(msg string) (string, error) { return "", errors.New(msg) }
	// The object named, or an empty map as `helm template` answers for one the cluster lacks.
	f["lookup"] = func(apiVersion, kind, namespace, name string) (map[string]interface{}, error) {
		for _, o := range objects {
			meta, _ := o["metadata"].(map[string]interface{})
			if o["apiVersion"] == apiVersion && o["kind"] == kind && meta["namespace"] == namespace &&
				meta["name"] == name {
				return o, nil
			}
		}
		return map[string]interface{}{}, nil
	}
	f["toYaml"] = toYAML
	f["mustToYaml"] = mustToYAML
	f["fromYaml"] = fromYAML
	f["fromYamlArray"] = fromYAMLArray
	f["toJson"] = toJSON
	f["mustToJson"] = mustToJSON
	f["fromJson"] = fromJSON
	f["fromJsonArray"] = fromJSONArray
	return f
}

func mustToYAML(v interface{}) (string, error) {
	data, err := yaml.Marshal(v)
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(string(data), "\n"), nil
}

// toYAML, like Helm's, renders an empty string when v cannot be encoded.
func toYAML(v interface{}) string {
	s, err := mustToYAML(v)
	if err != nil {
		return ""
	}
	return s
}

// fromYAML, like Helm's, returns a map with an "Error" key instead of failing.
func fromYAML(s string) map[string]interface{} {
	v, err := parseYAML([]byte(s))
	if err != nil {
		return map[string]interface{}{"Error": err.Error()}
	}
	m, ok := v.(map[string]interface{})
	if !ok {
		return map[string]interface{}{}
	}
	return m
}

func fromYAMLArray(s string) []interface{} {
	v, err := parseYAML([]byte(s))
	if err != nil {
		return []interface{}{err.Error()}
	}
	a, _ := v.([]interface{})
	return a
}

func mustToJSON(v interface{}) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(true)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}

func toJSON(v interface{}) string {
	s, err := mustToJSON(v)
	if err != nil {
		return ""
	}
	return s
}

func fromJSON(s string) map[string]interface{} {
	m := map[string]interface{}{}
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}

func fromJSONArray(s string) []interface{} {
	var a []interface{}
	if err := json.Unmarshal([]byte(s), &a); err != nil {
		return []interface{}{err.Error()}
	}
	return a
}
