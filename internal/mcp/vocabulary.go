package mcp

import "slices"

// One vocabulary: MCP arguments carry the names of the HTTP API's fields and query
// parameters, which are the CLI's flags with '_' for '-' (gpu_mem, --gpu-mem,
// ?gpu_mem=). Four arguments had names of their own; they were renamed, and the old
// names stay accepted as deprecated aliases (docs/OPERATIONS.md has the table):
//
//	find_idle      gpu_mem_gb -> gpu_mem   (GET /api/idle?gpu_mem=, mosaic idle --gpu-mem)
//	task_logs      tail_bytes -> tail      (GET /api/tasks/{id}/logs?tail=, mosaic logs --tail)
//	recent_events  before_id  -> before    (GET /api/events?before=, mosaic events --before)
//	recent_events  kinds      -> kind      (GET /api/events?kind=, mosaic events --kind)
//	list_tasks     states     -> state     (GET /api/tasks?state=, mosaic tasks --state)

// deprecatedArgs maps each tool's deprecated argument names to the current ones.
var deprecatedArgs = map[string]map[string]string{
	"find_idle":     {"gpu_mem_gb": "gpu_mem"},
	"task_logs":     {"tail_bytes": "tail"},
	"recent_events": {"before_id": "before", "kinds": "kind"},
	"list_tasks":    {"states": "state"},
}

// pickInt resolves an argument given under its current and its deprecated name:
// either one, or both with the same value.
func pickInt[T int | int64](cur, old T, curName, oldName string) (T, error) {
	switch {
	case old == 0 || old == cur:
		return cur, nil
	case cur == 0:
		return old, nil
	}
	return 0, invalid("%s %d and %s %d disagree: give %s only (%s is its deprecated name)", curName, cur, oldName, old, curName, oldName)
}

// pickList is pickInt for list arguments.
func pickList[T ~string](cur, old []T, curName, oldName string) ([]T, error) {
	switch {
	case len(old) == 0 || slices.Equal(cur, old):
		return cur, nil
	case len(cur) == 0:
		return old, nil
	}
	return nil, invalid("%s %v and %s %v disagree: give %s only (%s is its deprecated name)", curName, cur, oldName, old, curName, oldName)
}
