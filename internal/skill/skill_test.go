package skill

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRootCopyIsIdentical(t *testing.T) {
	root, err := os.ReadFile(filepath.Join("..", "..", "SKILL.md"))
	if err != nil {
		t.Fatalf("the repository root must keep a copy of internal/skill/SKILL.md: %v", err)
	}
	if string(root) != Document() {
		t.Fatal("SKILL.md at the repository root differs from internal/skill/SKILL.md (the embedded one); " +
			"edit internal/skill/SKILL.md and run: cp internal/skill/SKILL.md SKILL.md")
	}
}

func TestDocumentTeachesTheWorkflow(t *testing.T) {
	doc := Document()
	if !strings.HasPrefix(doc, "---\nname: mosaic\ndescription: ") {
		t.Error("SKILL.md must start with front matter naming the skill and describing it")
	}
	for _, want := range []string{
		"list_resources", "find_idle", "draft_envelope", "submit_task", "get_task", "list_tasks", "wait_task",
		"cancel_task", "replan_task", "recent_events", "task_logs", "system_env", "mosaic serve", "mosaic status",
		"dry_run", "target", "pending", "placed", "submitted", "queued", "running", "succeeded", "failed", "cancelled",
		"verdict", "scores", "rank", "rationale", "candidates",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("SKILL.md does not mention %q", want)
		}
	}
	if n := len(strings.Fields(doc)); n > 1500 {
		t.Errorf("SKILL.md has %d words; keep it concise (at most 1500)", n)
	}
}
