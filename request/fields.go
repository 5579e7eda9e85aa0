package request

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"strings"
)

// Field is one -f/--raw-field or -F/--field of a call, as gh api takes them: key=value, where
// the key may append to an array (key[]) or nest an object (key[sub], key[sub][]).
type Field struct {
	Key string
	// Value is the value as it goes out: a string for -f; for -F, true, false, null and
	// integers are JSON values, @FILE and @- the file's or standard input's text.
	Value any
}

// ParseField reads one key=value. typed is -F: its value is converted, and @FILE or @- read.
func ParseField(raw string, typed bool, stdin io.Reader) (Field, error) {
	flag := "-f"
	if typed {
		flag = "-F"
	}
	key, value, ok := strings.Cut(raw, "=")
	if !ok || key == "" {
		return Field{}, Usagef("%s %q: want key=value", flag, raw)
	}
	if _, err := fieldPath(key); err != nil {
		return Field{}, Usagef("%s %q: %v", flag, raw, err)
	}
	if !typed {
		return Field{Key: key, Value: value}, nil
	}
	switch {
	case value == "true":
		return Field{Key: key, Value: true}, nil
	case value == "false":
		return Field{Key: key, Value: false}, nil
	case value == "null":
		return Field{Key: key, Value: nil}, nil
	case strings.HasPrefix(value, "@"):
		b, err := readAt(value[1:], stdin, flag)
		if err != nil {
			return Field{}, err
		}
		return Field{Key: key, Value: string(b)}, nil
	}
	if n, err := strconv.ParseInt(value, 10, 64); err == nil {
		return Field{Key: key, Value: n}, nil
	}
	return Field{Key: key, Value: value}, nil
}

// readAt reads @FILE or @- (standard input).
func readAt(name string, stdin io.Reader, flag string) ([]byte, error) {
	if name == "-" {
		if stdin == nil {
			return nil, Usagef("%s …=@-: no standard input", flag)
		}
		b, err := io.ReadAll(stdin)
		if err != nil {
			return nil, Usagef("%s …=@-: reading standard input: %v", flag, err)
		}
		return b, nil
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, Usagef("%s …=@%s: %v", flag, name, err)
	}
	return b, nil
}

// fieldPath splits key[a][b][] into its parts: "key", "a", "b", "" (an append).
func fieldPath(key string) ([]string, error) {
	name, rest, _ := strings.Cut(key, "[")
	if name == "" {
		return nil, fmt.Errorf("a key must start with a name")
	}
	parts := []string{name}
	if rest == "" && !strings.Contains(key, "[") {
		return parts, nil
	}
	rest = "[" + rest
	for rest != "" {
		if rest[0] != '[' {
			return nil, fmt.Errorf("want key, key[], key[sub] or key[sub][]")
		}
		end := strings.IndexByte(rest, ']')
		if end < 0 {
			return nil, fmt.Errorf("an unclosed [ in the key")
		}
		sub := rest[1:end]
		if sub == "" && end+1 != len(rest) {
			return nil, fmt.Errorf("[] may only end a key")
		}
		parts = append(parts, sub)
		rest = rest[end+1:]
	}
	return parts, nil
}

// FieldsBody builds the JSON body of a write from its fields: nested objects for key[sub],
// arrays for key[].
func FieldsBody(fields []Field) ([]byte, error) {
	root := map[string]any{}
	for _, f := range fields {
		path, _ := fieldPath(f.Key)
		if err := setPath(root, path, f.Value); err != nil {
			return nil, Usagef("field %s: %v", f.Key, err)
		}
	}
	return json.Marshal(root)
}

func setPath(obj map[string]any, path []string, v any) error {
	key := path[0]
	if len(path) == 1 {
		if _, dup := obj[key]; dup {
			return fmt.Errorf("given twice (use %s[] for an array)", key)
		}
		obj[key] = v
		return nil
	}
	if path[1] == "" { // key[]: append
		arr, _ := obj[key].([]any)
		if _, isArr := obj[key].([]any); obj[key] != nil && !isArr {
			return fmt.Errorf("%s is not an array", key)
		}
		obj[key] = append(arr, v)
		return nil
	}
	child, ok := obj[key].(map[string]any)
	if !ok {
		if obj[key] != nil {
			return fmt.Errorf("%s is not an object", key)
		}
		child = map[string]any{}
		obj[key] = child
	}
	return setPath(child, path[1:], v)
}

// AppendQuery adds key=value pairs to a target's query string, encoded (?a=1&b=2).
func AppendQuery(target string, pairs [][2]string) string {
	if len(pairs) == 0 {
		return target
	}
	var b strings.Builder
	b.WriteString(target)
	sep := "?"
	if strings.Contains(target, "?") {
		sep = "&"
		if strings.HasSuffix(target, "?") || strings.HasSuffix(target, "&") {
			sep = ""
		}
	}
	for _, p := range pairs {
		b.WriteString(sep + url.QueryEscape(p[0]) + "=" + url.QueryEscape(p[1]))
		sep = "&"
	}
	return b.String()
}

// QueryPairs turns fields into query pairs: each value as text (null as empty).
func QueryPairs(fields []Field) [][2]string {
	pairs := make([][2]string, 0, len(fields))
	for _, f := range fields {
		v := ""
		switch x := f.Value.(type) {
		case nil:
		case string:
			v = x
		default:
			v = fmt.Sprint(x)
		}
		pairs = append(pairs, [2]string{f.Key, v})
	}
	return pairs
}
