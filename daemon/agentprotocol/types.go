package agentprotocol

// The protocol's wire types, named and shaped as in testdata/openapi.yml.

// Task is an agent task: here, one run of an agent.
type Task struct {
	TaskID string `json:"task_id"`
	// Input is the run's task.
	Input string `json:"input"`
	// AdditionalInput carries what agentd knows about the task beyond the protocol:
	// the agent's name and id, its state, and the run's outcome once it ended.
	AdditionalInput map[string]any `json:"additional_input,omitempty"`
	Artifacts       []Artifact     `json:"artifacts"`
}

// Step is one proposal of a run, with its decision and result.
type Step struct {
	TaskID string `json:"task_id"`
	StepID string `json:"step_id"`
	// Name is the proposed command.
	Name string `json:"name"`
	// Status is created (awaiting input), running or completed.
	Status string `json:"status"`
	// Input is what the person sent when deciding: feedback or an answer; "" approves.
	Input           string         `json:"input"`
	AdditionalInput map[string]any `json:"additional_input,omitempty"`
	// Output says in words what the step did and what the agent proposes next, one
	// statement a line; the model's text and a command's output in it are escaped
	// (control, bidi and zero-width characters, line breaks), so no line is forged.
	Output string `json:"output"`
	// AdditionalOutput has the same as data: command, args, thoughts, result, decisions,
	// as they are (a client that shows them to a person escapes them).
	AdditionalOutput map[string]any `json:"additional_output,omitempty"`
	Artifacts        []Artifact     `json:"artifacts"`
	IsLast           bool           `json:"is_last"`
}

// Step statuses.
const (
	StatusCreated   = "created"
	StatusRunning   = "running"
	StatusCompleted = "completed"
)

// Artifact is a file in the task's workspace.
type Artifact struct {
	ArtifactID   string `json:"artifact_id"`
	AgentCreated bool   `json:"agent_created"`
	FileName     string `json:"file_name"`
	// RelativePath is the folder of the file in the workspace, "" for its top.
	RelativePath string `json:"relative_path"`
}

// Pagination describes one page of a list.
type Pagination struct {
	TotalItems  int `json:"total_items"`
	TotalPages  int `json:"total_pages"`
	CurrentPage int `json:"current_page"`
	PageSize    int `json:"page_size"`
}

// TaskListResponse is GET /ap/v1/agent/tasks.
type TaskListResponse struct {
	Tasks      []Task     `json:"tasks"`
	Pagination Pagination `json:"pagination"`
}

// StepListResponse is GET /ap/v1/agent/tasks/{task_id}/steps.
type StepListResponse struct {
	Steps      []Step     `json:"steps"`
	Pagination Pagination `json:"pagination"`
}

// ArtifactListResponse is GET /ap/v1/agent/tasks/{task_id}/artifacts.
type ArtifactListResponse struct {
	Artifacts  []Artifact `json:"artifacts"`
	Pagination Pagination `json:"pagination"`
}

// TaskRequest is the body of POST /ap/v1/agent/tasks. AdditionalInput may set "name"
// (the new agent's name) and "policy" (ask, auto or continuous); other keys are ignored.
type TaskRequest struct {
	Input           *string        `json:"input"`
	AdditionalInput map[string]any `json:"additional_input"`
}

// StepRequest is the body of POST /ap/v1/agent/tasks/{task_id}/steps. AdditionalInput
// may set "decision" (approve, deny or feedback; by default empty input approves and
// other input is feedback; or resume, which resumes a paused agent as agentctl resume
// does, clearing an unchecked change's mark), "count" (approve this proposal and the next count-1 without
// asking) and "step_id" (decide only if this is still the pending step).
type StepRequest struct {
	Input           *string        `json:"input"`
	AdditionalInput map[string]any `json:"additional_input"`
}
