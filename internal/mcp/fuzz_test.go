package mcp_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mosaic-hpc/mosaic/client"
	"github.com/mosaic-hpc/mosaic/internal/mcp"
)

// FuzzToolArguments sends arbitrary JSON objects to every tool of a server whose core
// is not running. Whatever the arguments, the answer must be a tool error with a
// message (argument validation or "start the core"), never a protocol failure or a
// crash.
func FuzzToolArguments(f *testing.F) {
	seeds := []string{
		`{}`, `{"id":""}`, `{"id":"abc","timeout_seconds":-1}`, `{"gpus":-5,"arch":"x"}`,
		`{"name":"x","command":"echo","envelope":{"walltime":{"min":"1h"}}}`,
		`{"envelope":{"gpus":{"min":"many"}}}`, `{"kinds":["decision",3]}`, `{"since":"-1h","limit":1e9}`,
		`{"system":null}`, `{"id":"abc","until":"running","timeout_seconds":1}`, `{"max_queue":null}`,
	}
	for i, s := range seeds {
		f.Add(uint8(i), []byte(s))
	}
	cl, err := client.New("http://"+deadAddr(f), "tok")
	if err != nil {
		f.Fatal(err)
	}
	srv := mcp.NewServer(mcp.Static(cl), mcp.Options{PollInterval: 10 * time.Millisecond})
	ct, st := sdk.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		f.Fatal(err)
	}
	defer ss.Close()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "fuzz", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		f.Fatal(err)
	}
	defer cs.Close()
	f.Fuzz(func(t *testing.T, which uint8, args []byte) {
		var obj map[string]any
		if json.Unmarshal(args, &obj) != nil || obj == nil {
			return // the client only sends JSON objects as arguments
		}
		name := allTools[int(which)%len(allTools)]
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		res, err := cs.CallTool(cctx, &sdk.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
		if err != nil {
			t.Fatalf("%s %s: protocol error %v", name, args, err)
		}
		if !res.IsError || text(res) == "" {
			t.Fatalf("%s %s: with no core running, want a tool error with a message, got %s", name, args, text(res))
		}
	})
}
