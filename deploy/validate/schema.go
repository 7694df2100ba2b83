package validate

import (
	"fmt"
	"sort"
)

// checkSchema walks obj against a structural OpenAPI v3 schema as the API server
// would prune and validate it: unknown fields (where the schema does not preserve
// them), wrong types, missing required fields and values outside an enum are errors.
// Returns one message per problem, each with its path.
func checkSchema(obj any, schema map[string]any, path string) []string {
	if schema == nil {
		return nil
	}
	if obj == nil {
		return nil
	}
	if p, _ := schema["x-kubernetes-preserve-unknown-fields"].(bool); p && schema["properties"] == nil {
		return nil
	}
	if io, _ := schema["x-kubernetes-int-or-string"].(bool); io {
		switch obj.(type) {
		case string, float64, int64, int:
			return nil
		}
		return []string{fmt.Sprintf("%s: want an integer or a string, got %T", at(path), obj)}
	}
	var errs []string
	if enum, ok := schema["enum"].([]any); ok && !contains(enum, obj) {
		errs = append(errs, fmt.Sprintf("%s: %v is not one of %v", at(path), obj, enum))
	}
	switch schema["type"] {
	case "object":
		m, ok := obj.(map[string]any)
		if !ok {
			return append(errs, fmt.Sprintf("%s: want an object, got %T", at(path), obj))
		}
		props, _ := schema["properties"].(map[string]any)
		extra, _ := schema["additionalProperties"].(map[string]any)
		preserve, _ := schema["x-kubernetes-preserve-unknown-fields"].(bool)
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			sub, known := props[k].(map[string]any)
			switch {
			case known:
				errs = append(errs, checkSchema(m[k], sub, path+"."+k)...)
			case extra != nil:
				errs = append(errs, checkSchema(m[k], extra, path+"."+k)...)
			case preserve || (props == nil && schema["additionalProperties"] == true):
			default:
				errs = append(errs, fmt.Sprintf("%s: unknown field %q", at(path), k))
			}
		}
		if req, ok := schema["required"].([]any); ok {
			for _, r := range req {
				if _, present := m[r.(string)]; !present {
					errs = append(errs, fmt.Sprintf("%s: required field %q is missing", at(path), r))
				}
			}
		}
	case "array":
		items, ok := obj.([]any)
		if !ok {
			return append(errs, fmt.Sprintf("%s: want a list, got %T", at(path), obj))
		}
		sub, _ := schema["items"].(map[string]any)
		for i, it := range items {
			errs = append(errs, checkSchema(it, sub, fmt.Sprintf("%s[%d]", path, i))...)
		}
	case "string":
		if _, ok := obj.(string); !ok {
			errs = append(errs, fmt.Sprintf("%s: want a string, got %v", at(path), obj))
		}
	case "integer":
		if f, ok := obj.(float64); !ok || f != float64(int64(f)) {
			errs = append(errs, fmt.Sprintf("%s: want an integer, got %v", at(path), obj))
		}
	case "number":
		if _, ok := obj.(float64); !ok {
			errs = append(errs, fmt.Sprintf("%s: want a number, got %v", at(path), obj))
		}
	case "boolean":
		if _, ok := obj.(bool); !ok {
			errs = append(errs, fmt.Sprintf("%s: want true or false, got %v", at(path), obj))
		}
	}
	return errs
}

func at(path string) string {
	if path == "" {
		return "(top)"
	}
	return path[1:]
}

func contains(list []any, v any) bool {
	for _, x := range list {
		if fmt.Sprint(x) == fmt.Sprint(v) {
			return true
		}
	}
	return false
}
