package agent

import (
	"testing"

	"github.com/rookhq/rook/eventlog"
)

// Show linked a v1 spawn_agent output ({"agent_id": "<thread id>"}) to
// the child session the thread's rollout was imported as, but not a
// MultiAgentV2 one ({"task_name": "/root/worker"}, no thread id): the
// imported subagent was a child of the session, its spawn named it, and
// show did not say so. It links the spawn (call and output) to the child
// whose session_meta names that agent_path and whose parent thread is
// the spawner. A path is free again once its agent is closed: of two
// spawns of it, each is linked to its own subagent, by order (Codex gives
// the path to the next spawn only once the first's agent is closed);
// when fewer of its subagents than spawns are imported, which spawn's is
// missing is not known, and none is linked.
func TestShowLinksCodexV2SubagentsToTheirSessions(t *testing.T) {
	t.Run("one spawn", func(t *testing.T) {
		c := v2Subagent(t, nil)
		r, p, f, _, _ := c.imported(tree{"n.txt": "2\nB\n"})
		// #0 session_meta, #1/#2 P's patch, #3/#4 the spawn.
		checkSubagentLinks(t, r, p, map[uint64]eventlog.ID{3: f, 4: f}, []uint64{4})
	})
	twice := func(t *testing.T, first bool) (*Rook, eventlog.ID, eventlog.ID, eventlog.ID) {
		c := newCodexForkPair(t)
		c.p = append(c.p, spawnV2Lines("spawn1", "worker", "/root/worker", "00:03", true, true)...)
		if first {
			c.f = append(c.f, c.subagentV2Meta(codexFID, codexPID, "/root/worker", "00:03"))
		}
		c.p = append(c.p, collabLines("close_agent", "c1", `{"target":"worker"}`, `{"previous_status":{"completed":null}}`, "00:05")...)
		c.p = append(c.p, spawnV2Lines("spawn2", "worker", "/root/worker", "00:06", true, false)...)
		c.g = append(c.g, c.subagentV2Meta(codexGID, codexPID, "/root/worker", "00:06"))
		r, p, f, _, _ := c.imported(tree{})
		return r, p, f, c.gID
	}
	t.Run("spawned twice, both imported", func(t *testing.T) {
		r, p, f, g := twice(t, true)
		// #1/#2 the first spawn, #3/#4 the close, #5/#6 the second.
		checkSubagentLinks(t, r, p, map[uint64]eventlog.ID{1: f, 2: f, 5: g, 6: g}, []uint64{2, 6})
	})
	t.Run("spawned twice, one imported", func(t *testing.T) {
		r, p, _, _ := twice(t, false)
		checkSubagentLinks(t, r, p, map[uint64]eventlog.ID{}, nil)
	})
}
