// Package store is agentd's source of truth: agents, runs, proposals, decisions, episodes,
// schedules, team runs and the audit log in one SQLite file (WAL, synchronous=FULL).
//
// Every state change the agent cycle makes is one transaction here, so a kill -9 at any point
// leaves either the old state or the new one. The memory index and everything in RAM can be
// rebuilt from this file.
package store

import (
	"database/sql"
	"sync"
	"time"
)

// Store wraps the SQLite database.
type Store struct {
	db  *sql.DB
	now func() time.Time

	// stmts caches prepared statements by query text. With one connection a statement
	// cannot be prepared while a transaction holds it, so a query seen unprepared in a
	// transaction is prepared right after it ends; every later use is prepared.
	stmtMu sync.Mutex
	stmts  map[string]*sql.Stmt
}

// migrations are applied in order; PRAGMA user_version records how many ran.
// Append only: never edit a migration that has shipped.
var migrations = []string{
	`CREATE TABLE agents (
		id TEXT PRIMARY KEY,
		name TEXT NOT NULL UNIQUE,
		description TEXT NOT NULL DEFAULT '',
		goals TEXT NOT NULL DEFAULT '[]',
		directives TEXT NOT NULL DEFAULT '{}',
		task TEXT NOT NULL DEFAULT '',
		state TEXT NOT NULL,
		state_reason TEXT NOT NULL DEFAULT '',
		policy TEXT NOT NULL DEFAULT '{"mode":"ask"}',
		run_id TEXT NOT NULL DEFAULT '',
		step INTEGER NOT NULL DEFAULT 0,
		workspace TEXT NOT NULL,
		strikes INTEGER NOT NULL DEFAULT 0,
		prompt_tokens INTEGER NOT NULL DEFAULT 0,
		eval_tokens INTEGER NOT NULL DEFAULT 0,
		created_at INTEGER NOT NULL,
		updated_at INTEGER NOT NULL
	);
	CREATE TABLE runs (
		id TEXT PRIMARY KEY,
		agent_id TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
		task TEXT NOT NULL,
		started_at INTEGER NOT NULL,
		ended_at INTEGER,
		outcome TEXT NOT NULL DEFAULT '',
		reason TEXT NOT NULL DEFAULT ''
	);
	CREATE INDEX runs_agent ON runs(agent_id);
	CREATE TABLE proposals (
		id TEXT PRIMARY KEY,
		agent_id TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
		run_id TEXT NOT NULL,
		step INTEGER NOT NULL,
		thoughts TEXT NOT NULL,
		command TEXT NOT NULL,
		args TEXT NOT NULL,
		hash TEXT NOT NULL,
		status TEXT NOT NULL,
		result TEXT NOT NULL DEFAULT '',
		model TEXT NOT NULL DEFAULT '',
		prompt_tokens INTEGER NOT NULL DEFAULT 0,
		eval_tokens INTEGER NOT NULL DEFAULT 0,
		created_at INTEGER NOT NULL,
		updated_at INTEGER NOT NULL
	);
	CREATE INDEX proposals_agent ON proposals(agent_id, created_at);
	CREATE INDEX proposals_status ON proposals(status);
	CREATE TABLE decisions (
		id INTEGER PRIMARY KEY,
		proposal_id TEXT NOT NULL REFERENCES proposals(id) ON DELETE CASCADE,
		kind TEXT NOT NULL,
		count INTEGER NOT NULL DEFAULT 0,
		feedback TEXT NOT NULL DEFAULT '',
		by TEXT NOT NULL DEFAULT '',
		source TEXT NOT NULL DEFAULT '',
		at INTEGER NOT NULL
	);
	CREATE INDEX decisions_proposal ON decisions(proposal_id);
	CREATE TABLE episodes (
		id INTEGER PRIMARY KEY,
		agent_id TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
		run_id TEXT NOT NULL,
		step INTEGER NOT NULL,
		proposal_id TEXT NOT NULL,
		command TEXT NOT NULL,
		args TEXT NOT NULL,
		reasoning TEXT NOT NULL DEFAULT '',
		outcome TEXT NOT NULL,
		result TEXT NOT NULL DEFAULT '',
		feedback TEXT NOT NULL DEFAULT '',
		at INTEGER NOT NULL
	);
	CREATE INDEX episodes_agent ON episodes(agent_id, id);
	CREATE TABLE questions (
		proposal_id TEXT PRIMARY KEY REFERENCES proposals(id) ON DELETE CASCADE,
		agent_id TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
		text TEXT NOT NULL,
		asked_at INTEGER NOT NULL
	);
	CREATE TABLE audit (
		id INTEGER PRIMARY KEY,
		at INTEGER NOT NULL,
		agent_id TEXT NOT NULL DEFAULT '',
		kind TEXT NOT NULL,
		detail TEXT NOT NULL DEFAULT ''
	);
	CREATE INDEX audit_agent ON audit(agent_id, id);`,
	// The open proposal is looked up on every step; without this index the lookup walks
	// every proposal the agent ever made.
	`CREATE INDEX proposals_open ON proposals(agent_id, created_at)
		WHERE status IN ('pending','interrupted','approved','started');`,
	// Each step reads the run's latest proposal and the one before a pending proposal.
	`CREATE INDEX proposals_run_step ON proposals(agent_id, run_id, step);`,
	// Components' durable per-agent state (the context component's open files), and the
	// permission patterns people stored with "approve always" / "deny always" or agentctl.
	`CREATE TABLE agent_state (
		agent_id TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
		key TEXT NOT NULL,
		value BLOB NOT NULL,
		PRIMARY KEY (agent_id, key)
	) WITHOUT ROWID;
	CREATE TABLE permissions (
		id INTEGER PRIMARY KEY,
		agent_id TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
		effect TEXT NOT NULL CHECK (effect IN ('allow','deny')),
		pattern TEXT NOT NULL,
		created_by TEXT NOT NULL DEFAULT '',
		created_at INTEGER NOT NULL,
		UNIQUE (agent_id, effect, pattern)
	);
	ALTER TABLE decisions ADD COLUMN scope TEXT NOT NULL DEFAULT '';
	ALTER TABLE decisions ADD COLUMN pattern TEXT NOT NULL DEFAULT '';`,
	// Schedules. A schedule targets an existing agent (agent_id) or makes a fresh
	// one per run from a template; schedule_runs has one row per firing. Runs get budgets
	// (0 = none) and their step and token counts, written when they end.
	`CREATE TABLE schedules (
		id TEXT PRIMARY KEY,
		name TEXT NOT NULL UNIQUE,
		spec TEXT NOT NULL,
		time_zone TEXT NOT NULL DEFAULT '',
		agent_id TEXT NOT NULL DEFAULT '',
		template TEXT NOT NULL DEFAULT '',
		description TEXT NOT NULL DEFAULT '',
		goal TEXT NOT NULL,
		autonomy TEXT NOT NULL DEFAULT 'ask' CHECK (autonomy IN ('ask','auto','patterns')),
		auto_steps INTEGER NOT NULL DEFAULT 0,
		allow TEXT NOT NULL DEFAULT '[]',
		max_steps INTEGER NOT NULL DEFAULT 0,
		max_tokens INTEGER NOT NULL DEFAULT 0,
		max_wall_ms INTEGER NOT NULL DEFAULT 0,
		delivery TEXT NOT NULL DEFAULT 'agentctl',
		concurrency TEXT NOT NULL DEFAULT 'skip',
		missed TEXT NOT NULL DEFAULT 'skip',
		paused INTEGER NOT NULL DEFAULT 0,
		created_at INTEGER NOT NULL,
		updated_at INTEGER NOT NULL,
		last_fired INTEGER NOT NULL DEFAULT 0,
		CHECK ((agent_id = '') <> (template = ''))
	);
	CREATE TABLE schedule_runs (
		id TEXT PRIMARY KEY,
		schedule_id TEXT NOT NULL REFERENCES schedules(id) ON DELETE CASCADE,
		scheduled_at INTEGER NOT NULL,
		started_at INTEGER NOT NULL DEFAULT 0,
		ended_at INTEGER NOT NULL DEFAULT 0,
		manual INTEGER NOT NULL DEFAULT 0,
		outcome TEXT NOT NULL,
		reason TEXT NOT NULL DEFAULT '',
		agent_id TEXT NOT NULL DEFAULT '',
		run_id TEXT NOT NULL DEFAULT '',
		steps INTEGER NOT NULL DEFAULT 0,
		tokens INTEGER NOT NULL DEFAULT 0
	);
	CREATE INDEX schedule_runs_schedule ON schedule_runs(schedule_id, scheduled_at);
	CREATE INDEX schedule_runs_run ON schedule_runs(run_id) WHERE run_id <> '';
	ALTER TABLE runs ADD COLUMN max_steps INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE runs ADD COLUMN max_tokens INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE runs ADD COLUMN max_wall_ms INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE runs ADD COLUMN tokens_base INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE runs ADD COLUMN steps INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE runs ADD COLUMN tokens INTEGER NOT NULL DEFAULT 0;`,
	// Memory. memories is the source of truth the Bleve index is rebuilt from
	// (agent_id '' is a shared memory, so it cannot reference agents; DeleteAgent removes an
	// agent's memories itself). episode_summaries holds the model's one-line summary of an
	// episode, made once; goal state lives in agent_state.
	`CREATE TABLE memories (
		id TEXT PRIMARY KEY,
		agent_id TEXT NOT NULL DEFAULT '',
		kind TEXT NOT NULL CHECK (kind IN ('episode','result','feedback','note','chat','file')),
		text TEXT NOT NULL,
		source TEXT NOT NULL DEFAULT '',
		created_at INTEGER NOT NULL
	);
	CREATE INDEX memories_agent ON memories(agent_id, kind, created_at);
	CREATE TABLE episode_summaries (
		episode_id INTEGER PRIMARY KEY REFERENCES episodes(id) ON DELETE CASCADE,
		agent_id TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
		line TEXT NOT NULL
	);`,
	// Chat bindings. A run started from chat is bound to a thread there; the
	// messages posted for its proposals and questions are recorded so they can be edited.
	`CREATE TABLE chat_bindings (
		platform TEXT NOT NULL,
		channel TEXT NOT NULL,
		thread TEXT NOT NULL,
		agent_id TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
		run_id TEXT NOT NULL DEFAULT '',
		team TEXT NOT NULL DEFAULT '',
		created_by TEXT NOT NULL DEFAULT '',
		created_at INTEGER NOT NULL,
		PRIMARY KEY (platform, channel, thread)
	) WITHOUT ROWID;
	CREATE INDEX chat_bindings_agent ON chat_bindings(agent_id, created_at);
	CREATE TABLE chat_messages (
		proposal_id TEXT NOT NULL REFERENCES proposals(id) ON DELETE CASCADE,
		platform TEXT NOT NULL,
		kind TEXT NOT NULL,
		channel TEXT NOT NULL,
		message TEXT NOT NULL,
		posted_at INTEGER NOT NULL,
		PRIMARY KEY (proposal_id, platform, kind)
	) WITHOUT ROWID;`,
	// Sub-agents. A helper agent names its parent; a parent's start_agent or
	// message_agent proposal stays started while a helper_waits row ties it to the helper's
	// run, and the run's end completes it (once: the row goes with the completion). No
	// foreign key on helper_id: a removed helper's end is still delivered.
	`ALTER TABLE agents ADD COLUMN parent_id TEXT NOT NULL DEFAULT '';
	CREATE INDEX agents_parent ON agents(parent_id) WHERE parent_id <> '';
	CREATE TABLE helper_waits (
		proposal_id TEXT PRIMARY KEY REFERENCES proposals(id) ON DELETE CASCADE,
		agent_id TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
		helper_id TEXT NOT NULL,
		helper_run TEXT NOT NULL,
		created_at INTEGER NOT NULL
	);
	CREATE INDEX helper_waits_run ON helper_waits(helper_run);`,
	// Per-agent budgets. steps_total counts the agent's proposals over all its
	// runs (back-filled from the proposals kept), busy_ms the time it spent thinking and
	// executing. budget_* are set by agentctl budget; NULL follows the config.
	`ALTER TABLE agents ADD COLUMN steps_total INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE agents ADD COLUMN busy_ms INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE agents ADD COLUMN budget_steps INTEGER;
	ALTER TABLE agents ADD COLUMN budget_tokens INTEGER;
	ALTER TABLE agents ADD COLUMN budget_busy_ms INTEGER;
	UPDATE agents SET steps_total = (SELECT COUNT(*) FROM proposals WHERE proposals.agent_id = agents.id);`,
	// SOP team runs. A team run keeps its workflow's source (a restart must not
	// depend on the file), its variables and a cursor; team_turns is its transcript. The
	// cursor and the turn that moves it are written together.
	`CREATE TABLE team_runs (
		id TEXT PRIMARY KEY,
		workflow TEXT NOT NULL,
		file TEXT NOT NULL DEFAULT '',
		source TEXT NOT NULL,
		task TEXT NOT NULL,
		status TEXT NOT NULL CHECK (status IN ('running','finished','turn_limit','stopped','failed')),
		reason TEXT NOT NULL DEFAULT '',
		state TEXT NOT NULL DEFAULT '',
		phase TEXT NOT NULL DEFAULT '',
		vars TEXT NOT NULL DEFAULT '{}',
		agents TEXT NOT NULL DEFAULT '{}',
		cursor TEXT NOT NULL DEFAULT '{}',
		turns INTEGER NOT NULL DEFAULT 0,
		max_turns INTEGER NOT NULL DEFAULT 0,
		wait_agent TEXT NOT NULL DEFAULT '',
		wait_run TEXT NOT NULL DEFAULT '',
		created_by TEXT NOT NULL DEFAULT '',
		created_at INTEGER NOT NULL,
		updated_at INTEGER NOT NULL,
		ended_at INTEGER NOT NULL DEFAULT 0
	);
	CREATE INDEX team_runs_running ON team_runs(status) WHERE status = 'running';
	CREATE TABLE team_turns (
		team_run_id TEXT NOT NULL REFERENCES team_runs(id) ON DELETE CASCADE,
		seq INTEGER NOT NULL,
		kind TEXT NOT NULL,
		state TEXT NOT NULL,
		phase TEXT NOT NULL DEFAULT '',
		phase_seq INTEGER NOT NULL DEFAULT 0,
		cycle INTEGER NOT NULL DEFAULT 0,
		role TEXT NOT NULL DEFAULT '',
		agent_id TEXT NOT NULL DEFAULT '',
		run_id TEXT NOT NULL DEFAULT '',
		text TEXT NOT NULL,
		mode TEXT NOT NULL DEFAULT '',
		at INTEGER NOT NULL,
		PRIMARY KEY (team_run_id, seq)
	) WITHOUT ROWID;`,
	// An agent limited to some commands (a team role's agent): a JSON list of
	// names; '' offers every command the daemon has. A team run's role agents are
	// removed when it ends unless keep_agents.
	`ALTER TABLE agents ADD COLUMN commands TEXT NOT NULL DEFAULT '';
	ALTER TABLE team_runs ADD COLUMN keep_agents INTEGER NOT NULL DEFAULT 0;`,
	// Team runs started from chat (/agent team) are bound to a thread there, one
	// per platform. seq is the last transcript entry posted in the thread, so a restarted
	// relay goes on from there without posting a turn twice.
	`CREATE TABLE team_bindings (
		team_run_id TEXT NOT NULL REFERENCES team_runs(id) ON DELETE CASCADE,
		platform TEXT NOT NULL,
		team TEXT NOT NULL DEFAULT '',
		channel TEXT NOT NULL,
		thread TEXT NOT NULL,
		seq INTEGER NOT NULL DEFAULT 0,
		created_by TEXT NOT NULL DEFAULT '',
		created_at INTEGER NOT NULL,
		PRIMARY KEY (team_run_id, platform)
	) WITHOUT ROWID;
	CREATE UNIQUE INDEX team_bindings_thread ON team_bindings(platform, channel, thread);`,
	// What a proposal would do (client.Preview as JSON: a file's diff, a shell
	// line's programs, a clone's host), worked out when it was made; '' for none.
	`ALTER TABLE proposals ADD COLUMN preview TEXT NOT NULL DEFAULT '';`,
	// Grants, the standing decisions that approve more than one proposal (y -N,
	// y!, agentctl policy add, a schedule's autonomy), and on each decision the grant it
	// made or that approved it. A policy's auto steps left from before become count grants
	// of the agent's current run, made by "policy"; the agent's mode then only mirrors them.
	`CREATE TABLE grants (
		id TEXT PRIMARY KEY,
		agent_id TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
		kind TEXT NOT NULL CHECK (kind IN ('count','exact','pattern')),
		made_by TEXT NOT NULL DEFAULT '',
		source TEXT NOT NULL DEFAULT '',
		label TEXT NOT NULL DEFAULT '',
		command TEXT NOT NULL DEFAULT '',
		hash TEXT NOT NULL DEFAULT '',
		pattern TEXT NOT NULL DEFAULT '',
		count INTEGER NOT NULL DEFAULT 0,
		used INTEGER NOT NULL DEFAULT 0,
		expires_at INTEGER,
		run_id TEXT NOT NULL DEFAULT '',
		created_at INTEGER NOT NULL,
		revoked_at INTEGER,
		revoked_by TEXT NOT NULL DEFAULT ''
	);
	CREATE INDEX grants_agent ON grants(agent_id, created_at);
	ALTER TABLE decisions ADD COLUMN grant_id TEXT NOT NULL DEFAULT '';
	ALTER TABLE decisions ADD COLUMN grant_label TEXT NOT NULL DEFAULT '';
	INSERT INTO grants (id, agent_id, kind, made_by, source, label, count, run_id, created_at)
		SELECT 'g-' || lower(hex(randomblob(6))), id, 'count', 'policy', 'config',
			'auto mode', json_extract(policy, '$.auto_steps'), run_id, updated_at
		FROM agents WHERE json_extract(policy, '$.mode') = 'auto' AND json_extract(policy, '$.auto_steps') > 0;`,
	// A chat reply or click is bound to the proposal whose message it names;
	// that lookup (ChatMessageAt) runs on every reply and click.
	`CREATE INDEX chat_messages_at ON chat_messages(platform, channel, message);`,
	// The relay's post that showed a bound run's end (end_post, of run end_run):
	// a reply written before it was written while that run went on and starts no new task.
	`ALTER TABLE chat_bindings ADD COLUMN end_post TEXT NOT NULL DEFAULT '';
	ALTER TABLE chat_bindings ADD COLUMN end_run TEXT NOT NULL DEFAULT '';`,
	// Tags on memories (a JSON array; '' for none), set by agentctl memory import.
	`ALTER TABLE memories ADD COLUMN tags TEXT NOT NULL DEFAULT '';`,
	// A chat decider's display name beside their id (by), so follow, history
	// and replay show "Ana" rather than U04ABC.
	`ALTER TABLE decisions ADD COLUMN by_name TEXT NOT NULL DEFAULT '';`,
	// Who said a memory (speaker) and the turn before it (context), indexed as
	// fields of their own. Chat memories written before have the speaker in their source:
	// an import's "Ana", or the relay's "slack message from Ana".
	`ALTER TABLE memories ADD COLUMN speaker TEXT NOT NULL DEFAULT '';
	ALTER TABLE memories ADD COLUMN context TEXT NOT NULL DEFAULT '';
	UPDATE memories SET speaker = CASE WHEN instr(source, ' message from ') > 0
		THEN substr(source, instr(source, ' message from ') + 14) ELSE source END
		WHERE kind = 'chat';`,
	// File memories: write_file and delete_file replace or forget a file's memories by
	// (agent, kind, source) on every step that writes a file; without this index that
	// scanned all the agent's file memories, a cost growing with every file written.
	`CREATE INDEX memories_source ON memories(agent_id, kind, source);`,
	// The sandbox profile an automatic approval gave an execute command ('' for a person's
	// approval, 'bounded' or 'bounded-write' for a pattern's).
	`ALTER TABLE decisions ADD COLUMN profile TEXT NOT NULL DEFAULT '';`,
	// The chat messages and clicks the relay handled, by platform and scope (approvers'
	// apart from everyone else's), so a platform's redelivery is applied once, after a
	// restart too. Only each scope's latest are kept (FirstDelivery): id orders them.
	`CREATE TABLE chat_deliveries (
		id INTEGER PRIMARY KEY,
		platform TEXT NOT NULL,
		scope TEXT NOT NULL,
		key TEXT NOT NULL,
		at INTEGER NOT NULL,
		UNIQUE (platform, scope, key)
	);
	CREATE INDEX chat_deliveries_order ON chat_deliveries(platform, scope, id);`,
	// An exact grant of an execute command binds the workspace files its line names and
	// their contents (client.BoundFile as a JSON array; '' for none). Grants made before
	// bind none, so a line of theirs that names a workspace file asks again, once.
	`ALTER TABLE grants ADD COLUMN files TEXT NOT NULL DEFAULT '';`,
	// The disk an agent's workspace takes, measured after each command that may
	// write, and its disk budget set by agentctl budget (NULL follows the config).
	`ALTER TABLE agents ADD COLUMN disk_bytes INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE agents ADD COLUMN budget_disk INTEGER;`,
	// A decision's grant count travels as fields, not in its label's text: how many
	// proposals the grant approves and how many were left once the decision was made.
	// Labels written before keep their "(2 left)" and show as they are.
	`ALTER TABLE decisions ADD COLUMN grant_count INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE decisions ADD COLUMN grant_left INTEGER NOT NULL DEFAULT 0;`,
	// When an agent entered its state: a thinking agent's model call began then, which
	// every follower's spinner counts from. Agents from before count from their last change.
	`ALTER TABLE agents ADD COLUMN state_since INTEGER NOT NULL DEFAULT 0;
	UPDATE agents SET state_since = updated_at;`,
	// The workspace checkpoint taken before each step that may change it (id: the
	// proposal's), and once it ended what it changed; a rewind's row (id rw-…) holds the
	// checkpoint taken before the rewind, so the rewind can be undone.
	`CREATE TABLE step_checkpoints (
		id TEXT PRIMARY KEY,
		agent_id TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
		run_id TEXT NOT NULL,
		step INTEGER NOT NULL,
		kind TEXT NOT NULL,
		before_id INTEGER NOT NULL,
		after_id INTEGER NOT NULL DEFAULT 0,
		files INTEGER NOT NULL DEFAULT 0,
		added INTEGER NOT NULL DEFAULT 0,
		removed INTEGER NOT NULL DEFAULT 0,
		notice TEXT NOT NULL DEFAULT '',
		at INTEGER NOT NULL
	);
	CREATE INDEX step_checkpoints_step ON step_checkpoints(agent_id, step, at);`,
	// A schedule's wake conditions (api.WakeConditions as JSON, '' for none), and what
	// they saw (daemon/schedule/wake): seen is, per condition, what the last run that
	// started saw (content hashes, a page's validators), written only when a run starts
	// so that a firing whose run never started swallows no change; failures counts the
	// firings in a row whose check failed.
	`CREATE TABLE schedule_wake (
		schedule_id TEXT PRIMARY KEY REFERENCES schedules(id) ON DELETE CASCADE,
		seen TEXT NOT NULL DEFAULT '{}',
		seen_at INTEGER NOT NULL DEFAULT 0,
		failures INTEGER NOT NULL DEFAULT 0,
		last_error TEXT NOT NULL DEFAULT '',
		failed_at INTEGER NOT NULL DEFAULT 0
	) WITHOUT ROWID;
	ALTER TABLE schedules ADD COLUMN conditions TEXT NOT NULL DEFAULT '';`,
	// When a question's message was first answered (0: not yet), on the question's own
	// row: a rewind question takes one answer for as long as it can be clicked, across
	// restarts and however many others are answered (AnswerChatMessage).
	`ALTER TABLE chat_messages ADD COLUMN answered_at INTEGER NOT NULL DEFAULT 0;`,
	// What a proposal's message shows (the Ref a typed reply approves), and when it was
	// closed to decisions (0: open): the relay reads both here instead of keeping a copy.
	`ALTER TABLE chat_messages ADD COLUMN shown_ref TEXT NOT NULL DEFAULT '';
	ALTER TABLE chat_messages ADD COLUMN closed_at INTEGER NOT NULL DEFAULT 0;`,
	// What a step wrote that could not be checked, waiting for a person ('' for nothing):
	// written with the step's end, cleared by a person's resume (api.Agent.Unchecked).
	`ALTER TABLE agents ADD COLUMN unchecked TEXT NOT NULL DEFAULT '';`,
}
