package config

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
)

// tree is the configuration laid out as the file lays it out, in the order
// of the settings table.
type tree struct {
	key      string
	val      any // for a leaf: string, int, bool or []string
	children []*tree
}

func (c *Config) tree() *tree {
	root := &tree{}
	for _, s := range settings {
		n := root
		segs := strings.Split(s.Path, ".")
		for _, seg := range segs[:len(segs)-1] {
			var next *tree
			if l := len(n.children); l > 0 && n.children[l-1].key == seg && n.children[l-1].children != nil {
				next = n.children[l-1]
			} else {
				next = &tree{key: seg, children: []*tree{}}
				n.children = append(n.children, next)
			}
			n = next
		}
		n.children = append(n.children, &tree{key: segs[len(segs)-1], val: s.render(c)})
	}
	return root
}

// Dump returns the configuration as a YAML file with every setting, in the
// order of the documentation. Secrets are shown as <redacted>. Reading the
// dump back gives the same configuration (apart from secrets).
func (c *Config) Dump() []byte {
	var b bytes.Buffer
	var emit func(t *tree, indent string)
	emit = func(t *tree, indent string) {
		for _, ch := range t.children {
			b.WriteString(indent + ch.key + ":")
			switch v := ch.val.(type) {
			case nil:
				b.WriteString("\n")
				emit(ch, indent+"  ")
			case []string:
				if len(v) == 0 {
					b.WriteString(" []\n")
					continue
				}
				b.WriteString("\n")
				for _, s := range v {
					b.WriteString(indent + "  - " + yamlString(s) + "\n")
				}
			case string:
				b.WriteString(" " + yamlString(v) + "\n")
			case int:
				b.WriteString(" " + strconv.Itoa(v) + "\n")
			case bool:
				b.WriteString(" " + strconv.FormatBool(v) + "\n")
			}
		}
	}
	emit(c.tree(), "")
	b.WriteString(c.mirrorsYAML())
	return b.Bytes()
}

// String returns the dump: the configuration as YAML, secrets redacted.
func (c *Config) String() string { return string(c.Dump()) }

// MarshalJSON returns the configuration in the file's layout, secrets
// redacted, so that -o json and -o yaml show what a file would hold.
func (c *Config) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	var emit func(t *tree) error
	emit = func(t *tree) error {
		if t.val != nil {
			v, err := json.Marshal(t.val)
			b.Write(v)
			return err
		}
		b.WriteByte('{')
		for i, ch := range t.children {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Quote(ch.key) + ":")
			if err := emit(ch); err != nil {
				return err
			}
		}
		b.WriteByte('}')
		return nil
	}
	if err := emit(c.tree()); err != nil {
		return nil, err
	}
	return c.appendMirrorsJSON(b.Bytes())
}

var plainYAML = regexp.MustCompile(`^[A-Za-z0-9/._-][A-Za-z0-9/._()-]*$`)

// yamlString writes s bare when YAML reads it back as the same string, and
// double-quoted otherwise.
func yamlString(s string) string {
	if plainYAML.MatchString(s) && !yamlSpecial(s) {
		return s
	}
	return strconv.Quote(s)
}

// yamlSpecial reports whether a plain scalar s would be read as something
// other than a string (a number, a boolean, null) by YAML 1.1 or 1.2.
func yamlSpecial(s string) bool {
	switch strings.ToLower(s) {
	case "true", "false", "yes", "no", "y", "n", "on", "off", "null", "~", ".inf", "-.inf", ".nan":
		return true
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return true
	}
	if _, err := strconv.ParseInt(s, 0, 64); err == nil {
		return true
	}
	return false
}

// LogValue gives logs a one-line summary instead of the whole dump.
func (c *Config) LogValue() slog.Value {
	cidrs := make([]string, len(c.Cluster.ClusterCIDRs))
	for i, p := range c.Cluster.ClusterCIDRs {
		cidrs[i] = p.String()
	}
	return slog.GroupValue(
		slog.String("file", c.File),
		slog.String("cluster", c.Cluster.Name),
		slog.String("clusterCIDRs", strings.Join(cidrs, ",")),
		slog.String("routeTable", c.RouteTable.ID),
		slog.Int("subnets", len(c.Subnets)),
		slog.Int("mirrors", len(c.Mirrors)),
		slog.String("routes", string(c.Routes)),
		slog.String("association", string(c.Association.Policy)),
		slog.String("cloud", string(c.Cloud.Type)),
		slog.String("source", string(c.Source.Type)),
	)
}
