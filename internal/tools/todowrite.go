package tools

import (
	"context"
	_ "embed" // todowrite.md is the tool's description
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

//go:embed todowrite.md
var todoWriteDescription string

// TodoWrite limits.
const (
	// MaxTodos bounds the items of a list.
	MaxTodos = 50
	// MaxTodoRunes bounds an item's content and activeForm.
	MaxTodoRunes = 500
)

// Todo statuses.
const (
	TodoPending    = "pending"
	TodoInProgress = "in_progress"
	TodoCompleted  = "completed"
)

// Todo is one item of the model's todo list (Claude Code's TodoWrite
// shape, which the UI and the ACP face read from the call's input).
type Todo struct {
	Content    string `json:"content" jsonschema:"required,minLength=1,maxLength=500" jsonschema_description:"What is to be done, in the imperative."`
	Status     string `json:"status" jsonschema:"required,enum=pending,enum=in_progress,enum=completed" jsonschema_description:"pending, in_progress (at most one item) or completed."`
	ActiveForm string `json:"activeForm,omitempty" jsonschema:"maxLength=500" jsonschema_description:"The item in the present continuous, shown while it is in progress."`
}

// TodoList is a session's todo list: what TodoWrite last saved. Safe for
// concurrent use.
type TodoList struct {
	mu    sync.Mutex
	items []Todo
}

// Items returns a copy of the list.
func (l *TodoList) Items() []Todo {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.items)
}

// Set replaces the list.
func (l *TodoList) Set(items []Todo) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.items = slices.Clone(items)
}

// TodoWrite replaces the session's todo list. See todowrite.md for what
// the agent is told.
//
// Its guarantees:
//   - The input is the whole list, validated before anything is kept: at
//     most MaxTodos items, each with a non-empty content and a known
//     status, texts of at most MaxTodoRunes, at most one in_progress. A
//     bad list is a CodeInvalidInput error naming the item and leaves the
//     saved list as it was.
//   - It touches no file (ReadOnly: plan mode runs it); the list is kept
//     in Env.Todos for the session (the agent rebuilds it from the
//     history after a restart).
type TodoWrite struct{}

var _ Tool = TodoWrite{}

// Name implements Tool.
func (TodoWrite) Name() string { return "TodoWrite" }

// Description implements Tool.
func (TodoWrite) Description() string { return todoWriteDescription }

// ReadOnly implements Tool: the list is the session's, not the workspace's.
func (TodoWrite) ReadOnly() bool { return true }

var todoWriteSchema = sync.OnceValue(inputSchema[todoWriteParams]) // built on first use, not at start-up

// InputSchema implements Tool.
func (TodoWrite) InputSchema() json.RawMessage { return todoWriteSchema() }

type todoWriteParams struct {
	Todos *[]Todo `json:"todos" jsonschema:"required,maxItems=50" jsonschema_description:"The whole updated todo list, in order."`
}

// ParseTodos decodes and validates a TodoWrite input (see TodoWrite).
func ParseTodos(input json.RawMessage) ([]Todo, error) {
	var p todoWriteParams
	if err := DecodeInput(input, &p); err != nil {
		return nil, err
	}
	if p.Todos == nil {
		return nil, Errorf(CodeInvalidInput, `invalid input: field "todos" is required: the whole list, [] to clear it`)
	}
	todos := *p.Todos
	if len(todos) > MaxTodos {
		return nil, Errorf(CodeInvalidInput, "the list has %d items; at most %d: merge or drop finished ones", len(todos), MaxTodos)
	}
	active := -1
	for i, t := range todos {
		switch {
		case strings.TrimSpace(t.Content) == "":
			return nil, Errorf(CodeInvalidInput, "todos[%d].content is empty: say what is to be done", i)
		case utf8.RuneCountInString(t.Content) > MaxTodoRunes:
			return nil, Errorf(CodeInvalidInput, "todos[%d].content is longer than %d characters: keep items short", i, MaxTodoRunes)
		case utf8.RuneCountInString(t.ActiveForm) > MaxTodoRunes:
			return nil, Errorf(CodeInvalidInput, "todos[%d].activeForm is longer than %d characters", i, MaxTodoRunes)
		case t.Status != TodoPending && t.Status != TodoInProgress && t.Status != TodoCompleted:
			return nil, Errorf(CodeInvalidInput, "todos[%d].status is %q: use pending, in_progress or completed", i, t.Status)
		case t.Status == TodoInProgress && active >= 0:
			return nil, Errorf(CodeInvalidInput, "todos[%d] and todos[%d] are both in_progress: at most one item is in progress at a time", active, i)
		}
		if t.Status == TodoInProgress {
			active = i
		}
	}
	return todos, nil
}

// Run implements Tool.
func (TodoWrite) Run(_ context.Context, env *Env, input json.RawMessage) (*Result, error) {
	todos, err := ParseTodos(input)
	if err != nil {
		return nil, err
	}
	if env.Todos != nil {
		env.Todos.Set(todos)
	}
	if len(todos) == 0 {
		return &Result{Blocks: Text("The todo list is cleared.")}, nil
	}
	n := map[string]int{}
	for _, t := range todos {
		n[t.Status]++
	}
	return &Result{Blocks: Text(fmt.Sprintf("The todo list is saved: %d items (%d completed, %d in progress, %d pending). "+
		"Keep it up to date as you work: mark an item in_progress before you start it and completed as soon as it is done.",
		len(todos), n[TodoCompleted], n[TodoInProgress], n[TodoPending]))}, nil
}
