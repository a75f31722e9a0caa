package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The transports a server may use (ServerConfig.Type).
const (
	TransportStdio = "stdio"
	TransportHTTP  = "http"
	TransportSSE   = "sse"
	// TransportSDK is an SDK host's in-process server (type "sdk"), reached through
	// Options.SDK.
	TransportSDK = "sdk"
)

// ServerConfig is one MCP server in Claude Code's .mcp.json form: a command to run (stdio),
// or the URL of a streamable HTTP or SSE endpoint. Keys this client does not use
// (timeout, oauth, description, ...) are ignored.
type ServerConfig struct {
	// Type is stdio (the default when Command is set), http or sse.
	Type    string            `json:"type,omitempty"`
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// Source says where the server was configured (a file, --mcp-config, an agent file),
	// for messages.
	Source string `json:"-"`
}

// Transport returns the server's transport: Type, or stdio when it is empty.
func (c ServerConfig) Transport() string {
	if c.Type == "" {
		return TransportStdio
	}
	return c.Type
}

// Validate reports what makes c unusable.
func (c ServerConfig) Validate() error {
	switch c.Transport() {
	case TransportStdio:
		if strings.TrimSpace(c.Command) == "" {
			return errors.New("a stdio server needs a command")
		}
		if c.URL != "" {
			return errors.New("a stdio server takes a command, not a url (set type to http or sse)")
		}
	case TransportSDK:
		if c.Command != "" || c.URL != "" {
			return errors.New("an sdk server runs in the SDK host: it takes no command or url")
		}
	case TransportHTTP, TransportSSE:
		if c.Command != "" {
			return fmt.Errorf("an %s server takes a url, not a command", c.Type)
		}
		u, err := url.Parse(c.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("an %s server needs an http(s) url", c.Type)
		}
	default:
		return fmt.Errorf("type %q is not supported: want stdio, http or sse (or sdk, from an SDK host)", c.Type)
	}
	return nil
}

// Equal reports whether c and o start the same server (Source aside).
func (c ServerConfig) Equal(o ServerConfig) bool {
	return c.Transport() == o.Transport() && c.Command == o.Command && slices.Equal(c.Args, o.Args) &&
		maps.Equal(c.Env, o.Env) && c.URL == o.URL && maps.Equal(c.Headers, o.Headers)
}

// LogValue keeps the values of env and headers, which often hold credentials, out of logs,
// and the credentials (the token of "Bearer <token>" too) out of the command, its
// arguments and the URL.
func (c ServerConfig) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("type", c.Transport())}
	creds := c.credentials()
	if c.Command != "" {
		args := make([]string, len(c.Args))
		for i, a := range c.Args {
			args[i] = redact(a, creds)
		}
		attrs = append(attrs, slog.String("command", redact(c.Command, creds)), slog.Any("args", args))
	}
	if c.URL != "" {
		attrs = append(attrs, slog.String("url", redact(c.URL, append(c.secrets(), creds...))))
	}
	if len(c.Env) > 0 {
		attrs = append(attrs, slog.Any("env", slices.Sorted(maps.Keys(c.Env))))
	}
	if len(c.Headers) > 0 {
		attrs = append(attrs, slog.Any("headers", slices.Sorted(maps.Keys(c.Headers))))
	}
	return slog.GroupValue(attrs...)
}

// secrets returns the values of env and headers, and the password and query values of
// the URL, to be cut out of anything logged or shown.
func (c ServerConfig) secrets() []string {
	var out []string
	for _, v := range c.Env {
		out = append(out, v)
	}
	for _, v := range c.Headers {
		out = append(out, v)
	}
	return append(out, urlSecrets(c.URL)...)
}

// credentials returns the values of c that are credentials, to be cut out of what the
// server hands back (its tool results): the values of the env entries and headers whose
// names name a credential (credentialName), and the token of "Bearer <token>", the
// passwords of URLs in env values, and the URL's password and query values. The other env values (paths, log levels, endpoints)
// stay: cutting them out would mangle the results that mention them.
func (c ServerConfig) credentials() []string {
	var out []string
	for _, m := range []map[string]string{c.Env, c.Headers} {
		for k, v := range m {
			if credentialName(k) {
				out = append(out, v)
				if _, cred, ok := strings.Cut(v, " "); ok { // "Bearer <token>": the token alone too
					out = append(out, strings.TrimSpace(cred))
				}
			} else if u, err := url.Parse(v); err == nil {
				if p, ok := u.User.Password(); ok {
					out = append(out, p)
				}
			}
		}
	}
	return append(out, urlSecrets(c.URL)...)
}

// urlSecrets returns the password and the query values of a server's URL ("" or a URL
// that does not parse: none).
func urlSecrets(raw string) []string {
	u, err := url.Parse(raw)
	if err != nil || raw == "" {
		return nil
	}
	var out []string
	if p, ok := u.User.Password(); ok {
		out = append(out, p)
	}
	for _, vs := range u.Query() {
		out = append(out, vs...)
	}
	return out
}

// credentialName reports whether an env variable or header of that name holds a
// credential: GITHUB_TOKEN, BRAVE_API_KEY, Authorization, X-Api-Key, DB_PASSWORD, ...
func credentialName(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"auth", "token", "key", "secret", "pass", "credential", "cookie", "private"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// normalize maps the transport names other clients write to ours.
func (c ServerConfig) normalize() ServerConfig {
	switch strings.ToLower(strings.TrimSpace(c.Type)) {
	case "streamable-http", "streamablehttp", "streamable_http":
		c.Type = TransportHTTP
	default:
		c.Type = strings.ToLower(strings.TrimSpace(c.Type))
	}
	return c
}

// ParseJSON parses an MCP configuration in Claude Code's form,
// {"mcpServers": {NAME: SERVER, ...}}. The servers are as written: Resolve expands and
// validates them.
func ParseJSON(data []byte, source string) (map[string]ServerConfig, error) {
	var doc struct {
		MCPServers map[string]json.RawMessage `json:"mcpServers"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if doc.MCPServers == nil {
		return nil, errors.New(`want {"mcpServers": {NAME: {command, args, env} | {type, url, headers}}}`)
	}
	out := make(map[string]ServerConfig, len(doc.MCPServers))
	for _, name := range slices.Sorted(maps.Keys(doc.MCPServers)) {
		c, err := parseServer(name, doc.MCPServers[name])
		if err != nil {
			return nil, err
		}
		c.Source = source
		out[name] = c
	}
	return out, nil
}

// ParseMap parses servers held as decoded YAML or JSON (the mcp-servers settings key, an
// agent file's inline servers): {NAME: SERVER, ...}, as written (see Resolve).
func ParseMap(m map[string]any, source string) (map[string]ServerConfig, error) {
	out := make(map[string]ServerConfig, len(m))
	for _, name := range slices.Sorted(maps.Keys(m)) {
		raw, err := json.Marshal(m[name])
		if err != nil {
			return nil, fmt.Errorf("server %q: %w", name, err)
		}
		c, err := parseServer(name, raw)
		if err != nil {
			return nil, err
		}
		c.Source = source
		out[name] = c
	}
	return out, nil
}

func parseServer(name string, raw json.RawMessage) (ServerConfig, error) {
	if strings.TrimSpace(name) == "" {
		return ServerConfig{}, errors.New("a server with an empty name")
	}
	var c ServerConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		return ServerConfig{}, fmt.Errorf("server %q: want {command, args, env} or {type, url, headers}: %w", name, err)
	}
	return c.normalize(), nil
}

// Resolve expands c's ${VAR} references (Expand) and validates the result.
func (c ServerConfig) Resolve(lookup func(string) (string, bool)) (ServerConfig, error) {
	c, err := c.Expand(lookup)
	if err == nil {
		err = c.Validate()
	}
	return c, err
}

// Expand replaces ${VAR} and ${VAR:-default} in the command, args, env values, url and
// header values with values from lookup, as Claude Code does in .mcp.json. A variable
// that is not set and has no default is an error naming it. "$VAR" without braces is
// left as it is.
func (c ServerConfig) Expand(lookup func(string) (string, bool)) (ServerConfig, error) {
	var missing []string
	exp := func(s string) string {
		out, miss := expand(s, lookup)
		missing = append(missing, miss...)
		return out
	}
	c.Command = exp(c.Command)
	c.Args = slices.Clone(c.Args)
	for i := range c.Args {
		c.Args[i] = exp(c.Args[i])
	}
	c.URL = exp(c.URL)
	c.Env = maps.Clone(c.Env)
	for k, v := range c.Env {
		c.Env[k] = exp(v)
	}
	c.Headers = maps.Clone(c.Headers)
	for k, v := range c.Headers {
		c.Headers[k] = exp(v)
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return c, fmt.Errorf("environment variables not set: %s", strings.Join(slices.Compact(missing), ", "))
	}
	return c, nil
}

// expand expands the ${...} references of s and returns the names that were not set.
func expand(s string, lookup func(string) (string, bool)) (string, []string) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	var missing []string
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			break
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			break
		}
		b.WriteString(s[:i])
		ref := s[i+2 : i+j]
		name, def, hasDef := strings.Cut(ref, ":-")
		if v, ok := lookup(name); ok && (v != "" || !hasDef) {
			b.WriteString(v)
		} else if hasDef {
			b.WriteString(def)
		} else {
			missing = append(missing, name)
		}
		s = s[i+j+1:]
	}
	b.WriteString(s)
	return b.String(), missing
}

// LoadInput names the sources of a run's MCP configuration.
type LoadInput struct {
	// Configs are the --mcp-config values, in order: each a file path (relative to
	// WorkDir) or JSON text.
	Configs []string
	WorkDir string
	// Strict reads only Configs (--strict-mcp-config).
	Strict bool
	// Settings is the mcp-servers map of the settings files, and SettingsSource where
	// it came from. The caller leaves out a project file's servers when the project is
	// not trusted.
	Settings       map[string]any
	SettingsSource string
	// ProjectDir holds .mcp.json, which is read only when Trusted.
	ProjectDir string
	Trusted    bool
	// LookupEnv expands ${VAR} references.
	LookupEnv func(string) (string, bool)
}

// ProjectFile is the project's MCP configuration file.
const ProjectFile = ".mcp.json"

// Load merges the configured servers. A later source replaces a same-named server of an
// earlier one: the settings files, then the project's .mcp.json (trusted projects only),
// then each --mcp-config in order. With Strict only --mcp-config counts. A broken
// --mcp-config or settings value is an error (the user's own input); a broken .mcp.json
// is a warning and is skipped, as are things left out for lack of trust.
func Load(in LoadInput) (map[string]ServerConfig, []string, error) {
	out := map[string]ServerConfig{}
	var warnings []string
	lookup := in.LookupEnv
	if lookup == nil {
		lookup = func(string) (string, bool) { return "", false }
	}
	add := func(servers map[string]ServerConfig) error {
		for _, name := range slices.Sorted(maps.Keys(servers)) {
			c, err := servers[name].Resolve(lookup)
			if err != nil {
				return fmt.Errorf("server %q (%s): %w", name, c.Source, err)
			}
			out[name] = c
		}
		return nil
	}
	if !in.Strict {
		if len(in.Settings) > 0 {
			servers, err := ParseMap(in.Settings, in.SettingsSource)
			if err != nil {
				return nil, nil, fmt.Errorf("settings: mcp-servers (from %s): %w", in.SettingsSource, err)
			}
			if err := add(servers); err != nil {
				return nil, nil, err
			}
		}
		if in.ProjectDir != "" {
			path := filepath.Join(in.ProjectDir, ProjectFile)
			data, err := readRegular(path)
			switch {
			case errors.Is(err, fs.ErrNotExist):
			case err != nil:
				warnings = append(warnings, fmt.Sprintf("%s: %v; skipped", path, err))
			case !in.Trusted:
				warnings = append(warnings, fmt.Sprintf("%s: ignored: the project is not trusted (--trust-project starts its servers)", path))
			default:
				servers, err := ParseJSON(data, path)
				if err == nil {
					err = add(servers)
				}
				if err != nil {
					warnings = append(warnings, fmt.Sprintf("%s: %v; skipped", path, err))
				}
			}
		}
	}
	for _, v := range in.Configs {
		servers, err := parseFlag(v, in.WorkDir)
		if err != nil {
			return nil, nil, err
		}
		if err := add(servers); err != nil {
			return nil, nil, err
		}
	}
	if len(out) == 0 {
		return nil, warnings, nil
	}
	return out, warnings, nil
}

// parseFlag reads one --mcp-config value: JSON text when it starts with "{", else a file
// (relative to dir).
func parseFlag(v, dir string) (map[string]ServerConfig, error) {
	if t := strings.TrimSpace(v); strings.HasPrefix(t, "{") {
		servers, err := ParseJSON([]byte(t), "--mcp-config")
		if err != nil {
			return nil, fmt.Errorf("--mcp-config: %w", err)
		}
		return servers, nil
	}
	path := v
	if !filepath.IsAbs(path) && dir != "" {
		path = filepath.Join(dir, path)
	}
	data, err := readRegular(path)
	if err != nil {
		return nil, fmt.Errorf("--mcp-config: %w", err)
	}
	servers, err := ParseJSON(data, v)
	if err != nil {
		return nil, fmt.Errorf("--mcp-config %s: %w", v, err)
	}
	return servers, nil
}

// readRegular reads the file at path when it is a regular file (or a link to one): a
// FIFO or a device in a checkout would block the read, or never end it.
func readRegular(path string) ([]byte, error) {
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%v)", path, fi.Mode().Type())
	}
	return os.ReadFile(path)
}
