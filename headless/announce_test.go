package headless

import (
	"testing"

	"github.com/stoke-cli/stoke/streamjson"
)

// modelSink records the models of the system/init events it sees.
type modelSink struct{ models []string }

func (s *modelSink) Event(ev streamjson.Event) {
	if i, ok := ev.(*streamjson.Init); ok {
		s.models = append(s.models, i.Model)
	}
}

// A set_model is named in a system/init of its own after the first one, also when it
// came before that one was published (the SDK host answers control requests at once).
func TestSetModelAfterTheFirstInit(t *testing.T) {
	for _, early := range []bool{true, false} {
		sink := &modelSink{}
		p := &Parts{events: &events{sink: sink}}
		first := streamjson.NewInit()
		first.Model = "m1"
		if early {
			p.reannounce("m2")
			p.publish(first)
		} else {
			p.publish(first)
			p.reannounce("m2")
		}
		if len(sink.models) != 2 || sink.models[0] != "m1" || sink.models[1] != "m2" {
			t.Errorf("set_model before the first init %v: inits of models %q, want [m1 m2]", early, sink.models)
		}
	}
}
