// Package tenancy owns HiveD-style tenancy: cell types and chains, the
// physical cells of a cluster, the virtual clusters (VCs) of its tenants,
// and the binding between them by buddy cell allocation.
//
// It is the tenancy stage of the scheduling core (admission → order →
// tenancy → placement): a driver asks it where a gang of pods of one VC may
// run, and it answers with physical GPUs that keep every VC's promise
// satisfiable ("sharing safety"), plus the groups that must be preempted.
//
// The configuration is HiveD's own format (physicalCluster.cellTypes,
// physicalCells, virtualClusters with virtualCells and pinnedCells) so an
// existing HiveD config loads unchanged; fields that only matter to the
// Kubernetes extender are ignored with one warning line.
package tenancy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/palsched/pal/internal/csvin"
	"github.com/palsched/pal/internal/quote"
	"github.com/palsched/pal/internal/sizecap"
)

// Error locates a problem in a cells file: File, Line (1-based) and Field,
// the dotted YAML path of the key at fault (for example
// "physicalCluster.cellTypes.NODE.childCellNumber"). It is the same error
// type as the CSV inputs', so every input fails the same way.
type Error = csvin.Error

// CellTypeSpec is one entry of physicalCluster.cellTypes.
type CellTypeSpec struct {
	Name            string
	ChildCellType   string
	ChildCellNumber int
	IsNodeLevel     bool
	Line            int
}

// SKUSpec is one entry of physicalCluster.skuTypes: the resources of one
// leaf cell. GPU is its gpu count; a leaf type with gpu: 0 (a CPU SKU) is
// never handed to a GPU demand. HasGPU is false when gpu is not given.
type SKUSpec struct {
	GPU    int
	HasGPU bool
	Line   int
}

// PhysicalCellSpec is one entry of physicalCluster.physicalCells, or one of
// its cellChildren. CellType is empty below the top level (it follows from
// the parent's type).
type PhysicalCellSpec struct {
	CellType     string
	CellAddress  string
	PinnedCellID string
	PinnedLine   int // line of pinnedCellId
	Children     []PhysicalCellSpec
	Line         int
	Field        string // YAML path, for errors
}

// VirtualCellSpec is one entry of a VC's virtualCells: a dotted cell-type
// path whose first element names the chain (a top-level physical type) and
// whose last element names the level of the reserved cells.
type VirtualCellSpec struct {
	CellType   string
	CellNumber int
	Line       int
	Field      string
}

// PinnedCellSpec is one entry of a VC's pinnedCells.
type PinnedCellSpec struct {
	PinnedCellID string
	Line         int
	Field        string
}

// VCSpec is one virtual cluster.
type VCSpec struct {
	Name         string
	VirtualCells []VirtualCellSpec
	PinnedCells  []PinnedCellSpec
	Line         int
}

// Config is a parsed cells file. Types keeps the order of the file.
type Config struct {
	File          string
	CellTypes     []CellTypeSpec
	PhysicalCells []PhysicalCellSpec
	VCs           []VCSpec
	// Ignored lists the YAML paths of fields this package does not use
	// (HiveD's extender settings and unknown keys), sorted.
	Ignored []string
	// Skipped lists the Kubernetes objects of a deployment file other than
	// the ConfigMap holding the cells.
	Skipped []string
	// SKUs is physicalCluster.skuTypes by leaf type: of each, only
	// whether it is a GPU matters here.
	SKUs map[string]SKUSpec
	// OldNames is set when the file spells pinned cells the way HiveD
	// v0.2 did (reservationId, reservedCells); they are read as the
	// current names.
	OldNames bool
}

// Warning is the one line that names the ignored fields, the skipped
// Kubernetes objects and the old names read, or "".
func (c *Config) Warning() string {
	var parts []string
	if c.OldNames {
		parts = append(parts, "reading HiveD v0.2's reservationId and reservedCells as pinnedCellId and pinnedCells")
	}
	if len(c.Skipped) > 0 {
		parts = append(parts, "skipping Kubernetes objects that hold no cells: "+strings.Join(c.Skipped, ", "))
	}
	if len(c.Ignored) > 0 {
		parts = append(parts, "ignoring fields this scheduler does not use: "+strings.Join(c.Ignored, ", "))
	}
	if len(parts) == 0 {
		return ""
	}
	return c.File + ": " + strings.Join(parts, "; ")
}

// MaxFileBytes bounds a cells file (4 MiB). A cells file lists cell
// types and nodes, a few dozen bytes per node, so 4 MiB is well past a
// 100,000-node cluster, and refusing more keeps a stray or crafted file
// (a 50 MB key) from costing the YAML parser hundreds of MB.
const MaxFileBytes = 4 << 20

// LoadFile reads and parses a cells file.
func LoadFile(path string) (*Config, error) {
	data, err := sizecap.ReadFile(path, MaxFileBytes, "a cells file")
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse parses a cells file held in memory; name is used in errors.
// It checks the shape of the document only; New checks the semantics.
//
// The file is either a cells document or a HiveD deployment file: a
// stream of Kubernetes objects of which one is a ConfigMap holding the
// cells document under data."hivedscheduler.yaml". The other Kubernetes
// objects are skipped (named in the warning); any other extra document is
// an error, since it would be ignored.
func Parse(name string, data []byte) (*Config, error) {
	docs, err := decodeAll(name, data, 0)
	if err != nil {
		return nil, err
	}
	p := &parser{file: name, cfg: &Config{File: name}}
	var root *yaml.Node
	rootLine := 0
	for i, doc := range docs {
		n := doc.Content[0]
		if isNull(n) {
			continue
		}
		var found *yaml.Node
		if kind, objName, ok := kubeObject(n); ok {
			embedded, line, err := p.configMap(n, kind)
			if err != nil {
				return nil, err
			}
			if embedded == nil {
				p.cfg.Skipped = append(p.cfg.Skipped, fmt.Sprintf("document %d (%s %s, line %d)", i+1, kind, objName, n.Line))
				continue
			}
			found, n = embedded, &yaml.Node{Line: line}
		} else {
			found = n
		}
		if root != nil {
			return nil, p.errf(n, "", "a second cells document (the first starts at line %d); it would be ignored, so this file is refused", rootLine)
		}
		root, rootLine = found, n.Line
	}
	if root == nil {
		return nil, &Error{File: name, Msg: "empty document: want physicalCluster and virtualClusters (or a HiveD ConfigMap holding hivedscheduler.yaml)"}
	}
	if err := p.document(root); err != nil {
		return nil, err
	}
	sort.Strings(p.cfg.Ignored)
	return p.cfg, nil
}

// decodeAll splits a YAML stream into its documents, each checked for
// alias abuse; shift is added to every line (for a document embedded in
// another file's block scalar).
func decodeAll(name string, data []byte, shift int) ([]*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []*yaml.Node
	for {
		doc := &yaml.Node{}
		err := dec.Decode(doc)
		if err == io.EOF {
			break
		}
		if err != nil {
			e := yamlError(name, err).(*Error)
			if e.Line > 0 {
				e.Line += shift
			}
			return nil, e
		}
		if shift != 0 {
			shiftLines(doc, shift, map[*yaml.Node]bool{})
		}
		if err := checkAliases(name, doc); err != nil {
			return nil, err
		}
		if len(doc.Content) == 0 {
			continue
		}
		docs = append(docs, doc)
	}
	return docs, nil
}

func shiftLines(n *yaml.Node, shift int, seen map[*yaml.Node]bool) {
	if n == nil || seen[n] {
		return
	}
	seen[n] = true
	n.Line += shift
	for _, c := range n.Content {
		shiftLines(c, shift, seen)
	}
}

// kubeObject reports whether n is a Kubernetes object (a mapping with
// apiVersion and kind), with its kind and metadata.name.
func kubeObject(n *yaml.Node) (kind, name string, ok bool) {
	if n.Kind != yaml.MappingNode {
		return "", "", false
	}
	var api bool
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], resolve(n.Content[i+1])
		switch k.Value {
		case "apiVersion":
			api = true
		case "kind":
			if v.Kind == yaml.ScalarNode {
				kind = v.Value
			}
		case "metadata":
			if v.Kind == yaml.MappingNode {
				for j := 0; j+1 < len(v.Content); j += 2 {
					if v.Content[j].Value == "name" && resolve(v.Content[j+1]).Kind == yaml.ScalarNode {
						name = resolve(v.Content[j+1]).Value
					}
				}
			}
		}
	}
	return kind, name, api && kind != ""
}

// ConfigMapKey is the key of HiveD's ConfigMap that holds its config.
const ConfigMapKey = "hivedscheduler.yaml"

// configMap returns the cells document a ConfigMap holds under
// data."hivedscheduler.yaml", its lines numbered as in the outer file,
// or nil for any other Kubernetes object.
func (p *parser) configMap(n *yaml.Node, kind string) (*yaml.Node, int, error) {
	if kind != "ConfigMap" {
		return nil, 0, nil
	}
	var data *yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == "data" {
			data = resolve(n.Content[i+1])
		}
	}
	if data == nil || data.Kind != yaml.MappingNode {
		return nil, 0, nil
	}
	var text *yaml.Node
	for i := 0; i+1 < len(data.Content); i += 2 {
		if data.Content[i].Value == ConfigMapKey {
			text = resolve(data.Content[i+1])
		} else {
			p.ignore("data." + data.Content[i].Value)
		}
	}
	if text == nil {
		return nil, 0, nil
	}
	field := "data." + ConfigMapKey
	if text.Kind != yaml.ScalarNode {
		return nil, 0, p.errf(text, field, "want the cells file as a string, got %s", kindName(text))
	}
	// A block scalar's text starts on the line after its indicator; the
	// lines of a quoted string cannot be mapped back, so errors point at
	// its first line.
	shift := text.Line - 1
	if text.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		shift = text.Line
	}
	docs, err := decodeAll(p.file, []byte(text.Value), shift)
	if err != nil {
		return nil, 0, err
	}
	if len(docs) == 0 || isNull(docs[0].Content[0]) {
		return nil, 0, p.errf(text, field, "empty: want physicalCluster and virtualClusters")
	}
	if len(docs) > 1 {
		return nil, 0, p.errf(docs[1].Content[0], field, "holds a second YAML document; it would be ignored, so this file is refused")
	}
	return docs[0].Content[0], text.Line, nil
}

// MaxAliasNodes bounds the nodes that YAML aliases may repeat in one
// document. A parser that follows aliases repeats the anchored node at
// every alias, so a few nested aliases ("billion laughs") would make a
// kilobyte file describe billions of cells; no real config comes close.
const MaxAliasNodes = 1 << 20

// checkAliases refuses a document whose aliases would repeat more than
// MaxAliasNodes nodes, or an alias inside the node it names (a cycle).
// It counts with one size per anchored node, so it costs time linear in
// the file, whatever the aliases would expand to.
func checkAliases(file string, doc *yaml.Node) error {
	a := &aliasCheck{file: file, size: map[*yaml.Node]int{}, open: map[*yaml.Node]bool{}}
	return a.walk(doc, "")
}

type aliasCheck struct {
	file     string
	size     map[*yaml.Node]int // expanded node count, saturated at MaxAliasNodes+1
	open     map[*yaml.Node]bool
	repeated int
}

func (a *aliasCheck) expanded(n *yaml.Node) (int, bool) {
	if n == nil {
		return 0, true
	}
	if v, ok := a.size[n]; ok {
		return v, true
	}
	if a.open[n] {
		return 0, false
	}
	a.open[n] = true
	total := 1
	if n.Kind == yaml.AliasNode {
		v, ok := a.expanded(n.Alias)
		if !ok {
			return 0, false
		}
		total = v
	}
	for _, c := range n.Content {
		v, ok := a.expanded(c)
		if !ok {
			return 0, false
		}
		total = min(total+v, MaxAliasNodes+1)
	}
	delete(a.open, n)
	a.size[n] = total
	return total, true
}

func (a *aliasCheck) walk(n *yaml.Node, field string) error {
	if n.Kind == yaml.AliasNode {
		v, ok := a.expanded(n.Alias)
		if !ok {
			return &Error{File: a.file, Line: n.Line, Field: field, Msg: fmt.Sprintf("alias *%s lies inside the node it names", n.Value)}
		}
		a.repeated += v
		if a.repeated > MaxAliasNodes {
			return &Error{File: a.file, Line: n.Line, Field: field,
				Msg: fmt.Sprintf("alias *%s: aliases would repeat more than %d YAML nodes in all; write the cells out", n.Value, MaxAliasNodes)}
		}
		return nil
	}
	if n.Anchor != "" {
		// An anchored node that contains an alias to itself.
		if _, ok := a.expanded(n); !ok {
			return &Error{File: a.file, Line: n.Line, Field: field, Msg: fmt.Sprintf("anchor &%s contains an alias to itself", n.Anchor)}
		}
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if err := a.walk(k, field); err != nil {
				return err
			}
			if err := a.walk(n.Content[i+1], join(field, k.Value)); err != nil {
				return err
			}
		}
	default:
		for i, c := range n.Content {
			f := field
			if n.Kind == yaml.SequenceNode {
				f = fmt.Sprintf("%s[%d]", field, i)
			}
			if err := a.walk(c, f); err != nil {
				return err
			}
		}
	}
	return nil
}

// yamlError turns a YAML syntax error into an *Error with its line.
func yamlError(file string, err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		return &Error{File: file, Msg: te.Errors[0]}
	}
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "yaml: ")
	line := 0
	if strings.HasPrefix(msg, "line ") {
		rest := msg[len("line "):]
		if i := strings.Index(rest, ":"); i > 0 {
			if n, e := strconv.Atoi(rest[:i]); e == nil {
				line = n
				msg = strings.TrimSpace(rest[i+1:])
			}
		}
	}
	return &Error{File: file, Line: line, Msg: msg}
}

type parser struct {
	file string
	cfg  *Config
}

func (p *parser) errf(n *yaml.Node, field, format string, a ...any) error {
	line := 0
	if n != nil {
		line = n.Line
	}
	return &Error{File: p.file, Line: line, Field: field, Msg: fmt.Sprintf(format, a...)}
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("the scalar %s", quote.Value(n.Value))
	case yaml.AliasNode:
		return "an alias"
	}
	return "nothing"
}

// resolve follows aliases so that anchors in a config work as YAML says.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && (n.Tag == "!!null" || n.Value == "" && n.Style == 0))
}

// mapping iterates the key/value pairs of a mapping node, refusing
// duplicate keys (YAML forbids them, and HiveD's decoder would keep the
// last silently).
func (p *parser) mapping(n *yaml.Node, field string, f func(key string, k, v *yaml.Node) error) error {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		return p.errf(n, field, "want a mapping, got %s", kindName(n))
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), resolve(n.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			return p.errf(k, field, "want a plain key, got %s", kindName(k))
		}
		if prev, ok := seen[k.Value]; ok {
			return p.errf(k, join(field, k.Value), "duplicate key (first at line %d)", prev)
		}
		seen[k.Value] = k.Line
		if err := f(k.Value, k, v); err != nil {
			return err
		}
	}
	return nil
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}

func (p *parser) ignore(field string) { p.cfg.Ignored = append(p.cfg.Ignored, field) }

// oldName notes a HiveD v0.2 spelling.
func (p *parser) oldName(key string) {
	if key == "reservationId" || key == "reservedCells" {
		p.cfg.OldNames = true
	}
}

func (p *parser) str(n *yaml.Node, field string) (string, error) {
	if n.Kind != yaml.ScalarNode {
		return "", p.errf(n, field, "want a string, got %s", kindName(n))
	}
	if n.Tag == "!!null" {
		return "", nil
	}
	return strings.TrimSpace(n.Value), nil
}

func (p *parser) integer(n *yaml.Node, field string) (int, error) {
	if n.Kind != yaml.ScalarNode {
		return 0, p.errf(n, field, "want an integer, got %s", kindName(n))
	}
	v, err := strconv.ParseInt(strings.TrimSpace(n.Value), 10, 32)
	if err != nil {
		return 0, p.errf(n, field, "want an integer, got %q", n.Value)
	}
	return int(v), nil
}

func (p *parser) boolean(n *yaml.Node, field string) (bool, error) {
	if n.Kind != yaml.ScalarNode {
		return false, p.errf(n, field, "want true or false, got %s", kindName(n))
	}
	switch strings.ToLower(strings.TrimSpace(n.Value)) {
	case "true", "yes", "on":
		return true, nil
	case "false", "no", "off", "":
		return false, nil
	}
	return false, p.errf(n, field, "want true or false, got %q", n.Value)
}

func (p *parser) document(root *yaml.Node) error {
	var havePC, haveVC bool
	err := p.mapping(root, "", func(key string, k, v *yaml.Node) error {
		switch key {
		case "physicalCluster":
			havePC = true
			return p.physicalCluster(v)
		case "virtualClusters":
			haveVC = true
			return p.virtualClusters(v)
		default:
			p.ignore(key)
			return nil
		}
	})
	if err != nil {
		return err
	}
	if !havePC {
		return p.errf(root, "physicalCluster", "missing")
	}
	if !haveVC {
		return p.errf(root, "virtualClusters", "missing")
	}
	return nil
}

func (p *parser) physicalCluster(n *yaml.Node) error {
	const base = "physicalCluster"
	var haveTypes, haveCells bool
	err := p.mapping(n, base, func(key string, k, v *yaml.Node) error {
		f := join(base, key)
		switch key {
		case "cellTypes":
			haveTypes = true
			return p.mapping(v, f, func(name string, k, v *yaml.Node) error {
				ct, err := p.cellType(name, k, v, join(f, name))
				if err != nil {
					return err
				}
				p.cfg.CellTypes = append(p.cfg.CellTypes, ct)
				return nil
			})
		case "skuTypes":
			p.cfg.SKUs = map[string]SKUSpec{}
			return p.mapping(v, f, func(name string, k, v *yaml.Node) error {
				sku := SKUSpec{Line: k.Line}
				err := p.mapping(v, join(f, name), func(key string, kk, vv *yaml.Node) error {
					kf := join(join(f, name), key)
					if key != "gpu" {
						p.ignore(kf)
						return nil
					}
					n, err := p.integer(vv, kf)
					if err == nil && n < 0 {
						err = p.errf(vv, kf, "must not be negative, got %d", n)
					}
					sku.GPU, sku.HasGPU = n, true
					return err
				})
				p.cfg.SKUs[name] = sku
				return err
			})
		case "physicalCells":
			haveCells = true
			cells, err := p.physicalCells(v, f, true)
			p.cfg.PhysicalCells = cells
			return err
		default:
			p.ignore(f)
			return nil
		}
	})
	if err != nil {
		return err
	}
	if !haveTypes {
		return p.errf(n, base+".cellTypes", "missing")
	}
	if !haveCells {
		return p.errf(n, base+".physicalCells", "missing")
	}
	return nil
}

func (p *parser) cellType(name string, k, v *yaml.Node, field string) (CellTypeSpec, error) {
	ct := CellTypeSpec{Name: name, Line: k.Line}
	if name == "" {
		return ct, p.errf(k, field, "empty cell type name")
	}
	if strings.Contains(name, ".") {
		return ct, p.errf(k, field, "a cell type name may not contain '.' (VC cell types are dotted paths of names)")
	}
	err := p.mapping(v, field, func(key string, kk, vv *yaml.Node) error {
		f := join(field, key)
		var err error
		switch key {
		case "childCellType":
			ct.ChildCellType, err = p.str(vv, f)
		case "childCellNumber":
			ct.ChildCellNumber, err = p.integer(vv, f)
			if err == nil && ct.ChildCellNumber <= 0 {
				err = p.errf(vv, f, "must be positive, got %d", ct.ChildCellNumber)
			}
		case "isNodeLevel":
			ct.IsNodeLevel, err = p.boolean(vv, f)
		default:
			p.ignore(f)
		}
		return err
	})
	if err != nil {
		return ct, err
	}
	if ct.ChildCellType == "" {
		return ct, p.errf(k, join(field, "childCellType"), "missing")
	}
	if ct.ChildCellNumber == 0 {
		return ct, p.errf(k, join(field, "childCellNumber"), "missing")
	}
	return ct, nil
}

func (p *parser) physicalCells(n *yaml.Node, field string, top bool) ([]PhysicalCellSpec, error) {
	n = resolve(n)
	if isNull(n) && !top {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, p.errf(n, field, "want a list, got %s", kindName(n))
	}
	var out []PhysicalCellSpec
	for i, item := range n.Content {
		f := fmt.Sprintf("%s[%d]", field, i)
		item = resolve(item)
		pc := PhysicalCellSpec{Line: item.Line, Field: f}
		if isNull(item) {
			out = append(out, pc)
			continue
		}
		err := p.mapping(item, f, func(key string, k, v *yaml.Node) error {
			kf := join(f, key)
			var err error
			switch key {
			case "cellType":
				pc.CellType, err = p.str(v, kf)
			case "cellAddress":
				pc.CellAddress, err = p.str(v, kf)
			case "pinnedCellId", "reservationId":
				if pc.PinnedCellID != "" {
					return p.errf(k, kf, "pinnedCellId and its old name reservationId both given")
				}
				p.oldName(key)
				pc.PinnedCellID, err = p.str(v, kf)
				pc.PinnedLine = k.Line
			case "cellChildren":
				pc.Children, err = p.physicalCells(v, kf, false)
			default:
				p.ignore(kf)
			}
			return err
		})
		if err != nil {
			return nil, err
		}
		if top && pc.CellType == "" {
			return nil, p.errf(item, join(f, "cellType"), "missing")
		}
		out = append(out, pc)
	}
	return out, nil
}

func (p *parser) virtualClusters(n *yaml.Node) error {
	const base = "virtualClusters"
	n = resolve(n)
	if isNull(n) {
		return nil
	}
	return p.mapping(n, base, func(name string, k, v *yaml.Node) error {
		f := join(base, name)
		if name == "" {
			return p.errf(k, f, "empty VC name")
		}
		vc := VCSpec{Name: name, Line: k.Line}
		havePins := false
		v = resolve(v)
		if !isNull(v) {
			err := p.mapping(v, f, func(key string, kk, vv *yaml.Node) error {
				kf := join(f, key)
				switch key {
				case "virtualCells":
					return p.list(vv, kf, func(i int, item *yaml.Node, itf string) error {
						vcell := VirtualCellSpec{Line: item.Line, Field: itf}
						err := p.mapping(item, itf, func(key string, k3, v3 *yaml.Node) error {
							f3 := join(itf, key)
							var err error
							switch key {
							case "cellType":
								vcell.CellType, err = p.str(v3, f3)
							case "cellNumber":
								vcell.CellNumber, err = p.integer(v3, f3)
								if err == nil && vcell.CellNumber < 0 {
									err = p.errf(v3, f3, "must not be negative, got %d", vcell.CellNumber)
								}
							default:
								p.ignore(f3)
							}
							return err
						})
						if err != nil {
							return err
						}
						if vcell.CellType == "" {
							return p.errf(item, join(itf, "cellType"), "missing")
						}
						vc.VirtualCells = append(vc.VirtualCells, vcell)
						return nil
					})
				case "pinnedCells", "reservedCells":
					if havePins {
						return p.errf(kk, kf, "pinnedCells and its old name reservedCells both given")
					}
					havePins = true
					p.oldName(key)
					return p.list(vv, kf, func(i int, item *yaml.Node, itf string) error {
						pin := PinnedCellSpec{Line: item.Line, Field: itf}
						err := p.mapping(item, itf, func(key string, k3, v3 *yaml.Node) error {
							f3 := join(itf, key)
							var err error
							switch key {
							case "pinnedCellId", "reservationId":
								if pin.PinnedCellID != "" {
									return p.errf(k3, f3, "pinnedCellId and its old name reservationId both given")
								}
								p.oldName(key)
								pin.PinnedCellID, err = p.str(v3, f3)
							default:
								p.ignore(f3)
							}
							return err
						})
						if err != nil {
							return err
						}
						if pin.PinnedCellID == "" {
							return p.errf(item, join(itf, "pinnedCellId"), "missing")
						}
						vc.PinnedCells = append(vc.PinnedCells, pin)
						return nil
					})
				default:
					p.ignore(kf)
					return nil
				}
			})
			if err != nil {
				return err
			}
		}
		p.cfg.VCs = append(p.cfg.VCs, vc)
		return nil
	})
}

func (p *parser) list(n *yaml.Node, field string, f func(i int, item *yaml.Node, itemField string) error) error {
	n = resolve(n)
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		return p.errf(n, field, "want a list, got %s", kindName(n))
	}
	for i, item := range n.Content {
		item = resolve(item)
		if err := f(i, item, fmt.Sprintf("%s[%d]", field, i)); err != nil {
			return err
		}
	}
	return nil
}
