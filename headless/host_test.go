package headless

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stoke-cli/stoke/headless/sdkhost"
)

// A plain run has no SDK host; an SDK session, or a run given Claude Code's options, has.
func TestHostOnlyWhenAskedFor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		in, out  string
		sdk      sdkhost.Options
		wantHost bool
	}{
		{"text prompt", InputText, OutputText, sdkhost.Options{}, false},
		{"stream-json output", InputText, OutputStreamJSON, sdkhost.Options{}, false},
		{"stream-json input only", InputStreamJSON, OutputText, sdkhost.Options{}, false},
		{"SDK session", InputStreamJSON, OutputStreamJSON, sdkhost.Options{}, true},
		{"Claude Code's permission options", InputText, OutputText, sdkhost.Options{AllowedTools: []string{"Write"}}, true},
		{"--tools none", InputText, OutputText, sdkhost.Options{Tools: []string{}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := opts(t, model(t, echo), &bytes.Buffer{})
			o.InputFormat, o.OutputFormat, o.SDK = tt.in, tt.out, tt.sdk
			o.Stdin = strings.NewReader("")
			o = withDefaults(o)
			var cp *sdkhost.ControlPlane
			if o.InputFormat == InputStreamJSON {
				var err error
				if cp, err = sdkhost.Start(t.Context(), o.Stdin, o.sdkMode(), o.SDK.Dialect, o.Logger); err != nil {
					t.Fatal(err)
				}
				defer cp.Close()
			}
			s, err := Assemble(t.Context(), o, cp)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if got := s.host != nil; got != tt.wantHost {
				t.Fatalf("host = %v, want %v", got, tt.wantHost)
			}
			if s.host != nil {
				s.host.Close()
			}
		})
	}
}
