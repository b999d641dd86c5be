package tools_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/tools"
)

func TestTodoWrite(t *testing.T) {
	t.Parallel()
	list := &tools.TodoList{}
	env := &tools.Env{Todos: list}
	run := func(in string) (*tools.Result, error) {
		return tools.Invoke(t.Context(), env, tools.TodoWrite{}, "toolu_t", json.RawMessage(in))
	}
	res, err := run(`{"todos":[{"content":"Read the code","status":"completed"},{"content":"Fix the bug","status":"in_progress","activeForm":"Fixing the bug"},{"content":"Run the tests","status":"pending"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Blocks[0].Text; !strings.Contains(text, "saved: 3 items (1 completed, 1 in progress, 1 pending)") {
		t.Errorf("result %q", text)
	}
	saved := list.Items()
	if len(saved) != 3 || saved[1].ActiveForm != "Fixing the bug" || saved[2].Status != tools.TodoPending {
		t.Fatalf("saved %+v", saved)
	}
	long := strings.Repeat("x", tools.MaxTodoRunes+1)
	many, _ := json.Marshal(map[string]any{"todos": func() []tools.Todo {
		out := make([]tools.Todo, tools.MaxTodos+1)
		for i := range out {
			out[i] = tools.Todo{Content: "a", Status: "pending"}
		}
		return out
	}()})
	for in, want := range map[string]string{
		`{}`: `"todos" is required`,
		`{"todos":[{"content":"a","status":"in_progress"},{"content":"b","status":"in_progress"}]}`: "both in_progress",
		`{"todos":[{"content":"a","status":"done"}]}`:                                               `status is "done"`,
		`{"todos":[{"content":"  ","status":"pending"}]}`:                                           "todos[0].content is empty",
		`{"todos":[{"content":"` + long + `","status":"pending"}]}`:                                 "longer than 500",
		`{"todos":[{"content":"a","status":"pending","priority":"high"}]}`:                          "unknown field",
		`{"todos":"a"}`: "must be an array",
		string(many):    "at most 50",
	} {
		_, err := run(in)
		if tools.CodeOf(err) != tools.CodeInvalidInput || !strings.Contains(err.Error(), want) {
			t.Errorf("%.80s: %v, want code 1 with %q", in, err, want)
		}
	}
	if got := list.Items(); len(got) != 3 {
		t.Fatalf("a refused list replaced the saved one: %+v", got)
	}
	res, err = run(`{"todos":[]}`)
	if err != nil || len(list.Items()) != 0 || !strings.Contains(res.Blocks[0].Text, "cleared") {
		t.Fatalf("clear: %v %v %+v", res, err, list.Items())
	}
	if !(tools.TodoWrite{}).ReadOnly() || !(tools.WebFetch{}).ReadOnly() {
		t.Fatal("TodoWrite and WebFetch change nothing in the workspace: plan mode runs them")
	}
}
