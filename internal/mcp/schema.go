package mcp

import (
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"
	"github.com/mosaic-hpc/mosaic/internal/model"
)

// typeSchemas describe types whose JSON form differs from their Go kind.
func typeSchemas() map[reflect.Type]*jsonschema.Schema {
	return map[reflect.Type]*jsonschema.Schema{
		// Durations travel as strings: "2h", "1:30:00", "2-00:00:00".
		reflect.TypeFor[model.Duration](): {Type: "string",
			Description: `duration: Go style ("90m", "2h") or Slurm style ("1:30:00", "2-00:00:00")`},
		// The core answers with Go-style durations ("90m", "48h").
		reflect.TypeFor[v1.Duration]():     {Type: "string", Description: `duration, Go style ("90m", "2h", "45s")`},
		reflect.TypeFor[time.Time]():       {Type: "string", Format: "date-time"},
		reflect.TypeFor[json.RawMessage](): {},
	}
}

// schemaFor infers the JSON schema of T (a struct, or a pointer to one) for a tool's
// input or output. MCP requires both to be plain object schemas: a pointer's schema
// would also admit null (["null","object"]), which clients such as the TypeScript SDK
// reject, so pointers are described by their element type.
func schemaFor[T any]() *jsonschema.Schema {
	rt := reflect.TypeFor[T]()
	if rt.Kind() == reflect.Pointer {
		rt = rt.Elem()
	}
	s, err := jsonschema.ForType(rt, &jsonschema.ForOptions{TypeSchemas: typeSchemas()})
	if err != nil {
		panic(fmt.Sprintf("mcp: schema for %s: %v", rt, err))
	}
	if s.Type != "object" {
		panic(fmt.Sprintf("mcp: schema for %s has type %q %v; tools need object schemas", rt, s.Type, s.Types))
	}
	return s
}
