package experiment

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

type cfg struct {
	Kernel string `json:"kernel"`
	L      int    `json:"L"`
	Seed   int    `json:"seed"`
}

func testPlan(t *testing.T) Plan {
	t.Helper()
	p := Plan{Name: "test"}
	for _, seed := range []int{1, 2} {
		for _, k := range []string{"rbf", "softmax"} {
			for _, L := range []int{16, 32} {
				if _, err := p.Add(cfg{k, L, seed}, fmt.Sprintf("%s L=%d seed=%d", k, L, seed), float64(L), "fig"); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return p
}

// output is a deterministic function of the configuration, standing in for
// a training run.
func output(r Run) (any, error) {
	var c cfg
	if err := json.Unmarshal(r.Config, &c); err != nil {
		return nil, err
	}
	return map[string]float64{"top1": float64(c.L*c.Seed) / 100, "nll": 1 / float64(c.L)}, nil
}

func TestPlan(t *testing.T) {
	p := testPlan(t)
	if len(p.Runs) != 8 {
		t.Fatalf("%d runs, want 8", len(p.Runs))
	}
	i, err := p.Add(cfg{"rbf", 16, 1}, "again", 16, "other")
	if err != nil || i != 0 || len(p.Runs) != 8 || strings.Join(p.Runs[0].Tags, ",") != "fig,other" {
		t.Errorf("re-adding run 0: index %d, %v, %d runs, tags %v; want 0, nil, 8, [fig other]", i, err, len(p.Runs), p.Runs[0].Tags)
	}
	if err := p.Validate(); err != nil {
		t.Error(err)
	}
	if k := p.Runs[3].Key; k != `{"kernel":"softmax","L":32,"seed":1}` || p.Index(k) != 3 {
		t.Errorf("run 3 key %s, index %d", k, p.Index(k))
	}
	if _, err := p.Add(cfg{"x", 1, 1}, "bad", -1); err == nil {
		t.Error("a negative estimate was accepted")
	}
	if err := (Plan{}).Validate(); err == nil {
		t.Error("an empty plan validated")
	}
	bad := p
	bad.Runs = append([]Run{}, p.Runs...)
	bad.Runs[1].Key = bad.Runs[0].Key
	if err := bad.Validate(); err == nil {
		t.Error("a plan with two equal keys validated")
	}
	total, longest := p.Estimate()
	if total != 192 || longest != 32 {
		t.Errorf("estimate %v, longest %v; want 192, 32", total, longest)
	}
	var text bytes.Buffer
	if err := p.WriteText(&text, func(k string) bool { return k == p.Runs[1].Key }); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(text.String()), "\n")
	if len(lines) != 9 || !strings.HasPrefix(lines[0], "plan test: 8 runs, estimated 3m12s") || !strings.Contains(lines[0], "1 done") ||
		!strings.Contains(lines[1], "rbf L=16 seed=1 [fig,other]  {") || !strings.Contains(lines[2], "rbf L=32 seed=1 [fig] done  {") {
		t.Errorf("text plan:\n%s", text.String())
	}
	var js bytes.Buffer
	if err := p.WriteJSON(&js, nil); err != nil {
		t.Fatal(err)
	}
	var back PlanJSON
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.Count != 8 || back.EstimateSeconds != 192 || back.Runs[5].Key != p.Runs[5].Key {
		t.Errorf("JSON plan read back as %+v, %v", back, err)
	}
}

func TestStorePut(t *testing.T) {
	s, err := OpenStore(filepath.Join(t.TempDir(), "res"))
	if err != nil {
		t.Fatal(err)
	}
	if c, err := s.Load(); err != nil || len(c.Results) != 0 {
		t.Fatalf("a store not yet created: %v, %v; want empty", c, err)
	}
	if _, err := os.Stat(s.Dir()); !os.IsNotExist(err) {
		t.Errorf("OpenStore or Load created %s", s.Dir())
	}
	key := `{"kernel":"rbf","L":16,"seed":1}`
	r := Result{Key: key, Output: json.RawMessage(`{"top1":0.5,"nll":1.25}`)}
	if stored, err := s.Put(r); !stored || err != nil {
		t.Fatalf("first Put: %v, %v", stored, err)
	}
	if !s.Done(key) {
		t.Error("Done is false after Put")
	}
	// The same output, its keys in another order: kept, not stored again.
	r2 := r
	r2.Output = json.RawMessage(`{"nll": 1.25, "top1": 0.5}`)
	r2.Host = "other"
	if stored, err := s.Put(r2); stored || err != nil {
		t.Errorf("identical second Put: %v, %v; want false, nil", stored, err)
	}
	r3 := r
	r3.Output = json.RawMessage(`{"top1":0.75,"nll":1.25}`)
	var conflict *ConflictError
	if _, err := s.Put(r3); !errors.As(err, &conflict) {
		t.Errorf("a different second result: %v, want a ConflictError", err)
	}
	c, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Results[key]; len(c.Results) != 1 || !equalJSON(got.Output, r.Output) || got.Host == "other" {
		t.Errorf("loaded %d results, %+v; want the first", len(c.Results), got)
	}
	entries, _ := os.ReadDir(s.RunsDir())
	if len(entries) != 1 {
		t.Errorf("%d files in the runs directory, want 1 (no temporary left)", len(entries))
	}

	// A failure, then a success of the same run: the failure goes.
	fkey := `{"kernel":"softmax","L":16,"seed":1}`
	if err := s.PutFailure(fkey, nil, "lbl", 1, errors.New("NaN loss\nat step 3")); err != nil {
		t.Fatal(err)
	}
	c, _ = s.Load()
	if f, ok := c.Failures[fkey]; !ok || f.Error != "NaN loss\nat step 3" || s.Done(fkey) {
		t.Errorf("failure loaded as %+v, %v", f, ok)
	}
	if _, err := s.Put(Result{Key: fkey, Output: json.RawMessage(`1`)}); err != nil {
		t.Fatal(err)
	}
	c, _ = s.Load()
	if _, ok := c.Failures[fkey]; ok || len(c.Results) != 2 {
		t.Errorf("after the rerun: failures %v, %d results", c.Failures, len(c.Results))
	}
	// Leftovers of a killed writer and a hand-edited file are reported, not read.
	os.WriteFile(filepath.Join(s.RunsDir(), ".tmp-x.json-123"), []byte("{"), 0o644)
	os.WriteFile(filepath.Join(s.RunsDir(), "0123.json"), []byte(`{"key":"{}"}`), 0o644)
	c, _ = s.Load()
	if len(c.Temporary) != 1 || len(c.Unreadable) != 1 || len(c.Results) != 2 {
		t.Errorf("temporary %v, unreadable %v, %d results", c.Temporary, c.Unreadable, len(c.Results))
	}
	if _, err := s.Put(Result{Key: "k", Error: "x"}); err == nil {
		t.Error("Put of a failure was accepted")
	}
	// A key that is not UTF-8 would not read back as itself: refused.
	if _, err := s.Put(Result{Key: "{\"\x82\":0}", Output: json.RawMessage(`1`)}); err == nil {
		t.Error("Put of a non-UTF-8 key was accepted")
	}
	if err := s.PutFailure("\xff", nil, "", 0, errors.New("x")); err == nil {
		t.Error("PutFailure of a non-UTF-8 key was accepted")
	}
}

// TestStoreConcurrent: many workers storing the same runs at once leave one
// result per run and no temporary file.
func TestStoreConcurrent(t *testing.T) {
	dir := t.TempDir()
	p := testPlan(t)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := OpenStore(dir) // each worker its own Store, as on its own node
			if err != nil {
				errs <- err
				return
			}
			for _, r := range p.Runs {
				out, _ := output(r)
				b, _ := json.Marshal(out)
				if _, err := s.Put(Result{Key: r.Key, Config: r.Config, Output: b}); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "runs"))
	if len(entries) != len(p.Runs) {
		t.Errorf("%d files, want %d", len(entries), len(p.Runs))
	}
}

func TestJournal(t *testing.T) {
	dir := t.TempDir()
	journal := `{"config":{"kernel":"rbf","L":16,"seed":1},"final":{"top1":0.5},"train_seconds":3.5,"finished":"2026-01-02T03:04:05Z"}
{"config":{ "kernel": "rbf", "L": 32, "seed": 1 },"final":{"top1":0.25}}
{"config":{"kernel":"rbf","L":16,"seed":1},"final":{"top1":0.75},"train_seconds":3.5}
{"config":{"kernel":"x","L":1
` + "{\"config\":{\"\x82\":0},\"final\":1}\n"
	if err := os.WriteFile(filepath.Join(dir, JournalName), []byte(journal), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := OpenStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	a := c.Results[`{"kernel":"rbf","L":16,"seed":1}`]
	b, okb := c.Results[`{"kernel":"rbf","L":32,"seed":1}`]
	if len(c.Results) != 2 || string(a.Output) != `{"final":{"top1":0.75}}` || a.Seconds != 3.5 || !okb || !strings.HasSuffix(b.Source, "runs.jsonl:2") {
		t.Errorf("journal read as %d results: %+v, %+v", len(c.Results), a, b)
	}
	if len(c.Unreadable) != 2 || !strings.HasSuffix(c.Unreadable[0], ":4") || !strings.HasSuffix(c.Unreadable[1], ":5") {
		t.Errorf("unreadable %v, want lines 4 and 5 (cut, not UTF-8)", c.Unreadable)
	}
	// A plan sees the journal's runs as done, and Execute skips them.
	p := testPlan(t)
	rep, err := Collect(p, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Done) != 2 || len(rep.Missing) != 6 {
		t.Errorf("done %v, missing %v", rep.Done, rep.Missing)
	}
	n, err := s.Convert()
	if err != nil || n != 2 {
		t.Fatalf("Convert: %d, %v; want 2", n, err)
	}
	if n, err := s.Convert(); err != nil || n != 0 {
		t.Errorf("second Convert: %d, %v; want 0, nil", n, err)
	}
	if err := os.Remove(filepath.Join(dir, JournalName)); err != nil {
		t.Fatal(err)
	}
	c2, _ := s.Load()
	if got := c2.Results[a.Key]; !equalJSON(got.Output, a.Output) || got.Seconds != 3.5 || len(c2.Results) != 2 {
		t.Errorf("converted result %+v, want %+v", got, a)
	}
}

func TestExecuteAndMerge(t *testing.T) {
	p := testPlan(t)
	s, err := OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	fail := true
	run := func(i int, r Run) (any, error) {
		calls++
		if i == 5 && fail {
			return nil, errors.New("diverged")
		}
		return output(r)
	}
	// Two shards, the first run twice.
	for _, sh := range []string{"0/2", "1/2", "0/2"} {
		f := Flags{Shard: sh}
		ix, err := f.Indices(len(p.Runs))
		if err != nil {
			t.Fatal(err)
		}
		err = Execute(p, s, ix, run, nil)
		if (sh == "1/2") != (err != nil) || err != nil && !strings.Contains(err.Error(), "run 5 (") {
			t.Errorf("shard %s: %v", sh, err)
		}
	}
	if calls != 8 {
		t.Errorf("%d runs ran, want 8 (the second 0/2 skips its done runs)", calls)
	}
	rep, err := Collect(p, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Done) != 7 || fmt.Sprint(rep.Missing) != "[5]" || fmt.Sprint(rep.Failed) != "[5]" {
		t.Errorf("done %v missing %v failed %v", rep.Done, rep.Missing, rep.Failed)
	}
	if err := rep.Check(false); err == nil || !strings.Contains(err.Error(), "indices 5") || !strings.Contains(err.Error(), "-partial") {
		t.Errorf("Check: %v", err)
	}
	if err := rep.Check(true); err != nil || !strings.HasPrefix(rep.Note(), "PARTIAL: 7 of 8 runs") {
		t.Errorf("partial Check: %v, note %q", err, rep.Note())
	}
	var st bytes.Buffer
	rep.WriteStatus(&st)
	if !strings.Contains(st.String(), "failed: 5 (rbf L=32 seed=2): run 5 (rbf L=32 seed=2): diverged") {
		t.Errorf("status:\n%s", st.String())
	}
	// -index 5 reruns it.
	fail = false
	f := Flags{Index: "5"}
	ix, _ := f.Indices(len(p.Runs))
	if err := Execute(p, s, ix, run, nil); err != nil {
		t.Fatal(err)
	}
	rep, _ = Collect(p, s)
	if !rep.Complete() || rep.Check(false) != nil || rep.Note() != "" || len(rep.Failures) != 0 {
		t.Errorf("after the rerun: missing %v, failures %v", rep.Missing, rep.Failures)
	}
	if err := Execute(p, s, []int{8}, run, nil); err == nil {
		t.Error("index 8 of 8 runs was accepted")
	}
}

func TestFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		err  string
	}{
		{[]string{"-plan"}, ""},
		{[]string{"-index", "3"}, ""},
		{[]string{"-shard", "1/4"}, ""},
		{[]string{"-merge", "-partial"}, ""},
		{[]string{"-submit", "slurm", "-parallel", "2", "-cpus", "2"}, ""},
		{[]string{"-plan", "-merge"}, "exclude each other"},
		{[]string{"-index", "1", "-shard", "0/2"}, "exclude each other"},
		{[]string{"-partial"}, "-partial needs -merge"},
		{[]string{"-shard", "2/2"}, "-shard"},
		{[]string{"-index", "x"}, "-index"},
		{[]string{"-submit", "pbs"}, "-submit"},
		{[]string{"-parallel", "2"}, "-parallel needs -submit"},
		{[]string{"-submit", "slurm", "-cpus", "0"}, "-cpus"},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		var f Flags
		f.Register(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		set := map[string]bool{}
		fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
		err := f.Check(set)
		if (c.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("%v: %v, want %q", c.args, err, c.err)
		}
	}
	f := Flags{Index: "env"}
	t.Setenv("SLURM_ARRAY_TASK_ID", "2")
	t.Setenv("JOB_COMPLETION_INDEX", "6")
	if ix, err := f.Indices(8); err != nil || fmt.Sprint(ix) != "[6]" {
		t.Errorf("-index env: %v, %v; want [6] from JOB_COMPLETION_INDEX", ix, err)
	}
	if _, err := f.Indices(5); err == nil {
		t.Error("-index env = 6 of 5 runs accepted")
	}
	os.Unsetenv("JOB_COMPLETION_INDEX")
	if ix, err := f.Indices(8); err != nil || fmt.Sprint(ix) != "[2]" {
		t.Errorf("-index env: %v, %v; want [2] from SLURM_ARRAY_TASK_ID", ix, err)
	}
	os.Unsetenv("SLURM_ARRAY_TASK_ID")
	if _, err := f.Indices(8); err == nil {
		t.Error("-index env without the variables accepted")
	}
	if ix, _ := (&Flags{Shard: "1/3"}).Indices(8); fmt.Sprint(ix) != "[1 4 7]" {
		t.Errorf("-shard 1/3 of 8: %v", ix)
	}
}

func TestIndexList(t *testing.T) {
	for _, c := range []struct {
		in   []int
		want string
	}{{nil, ""}, {[]int{3}, "3"}, {[]int{0, 1, 2, 3, 5, 7, 8}, "0-3,5,7-8"}} {
		if got := IndexList(c.in); got != c.want {
			t.Errorf("IndexList(%v) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := SlurmTime(90061.2); got != "1-01:01:02" {
		t.Errorf("SlurmTime = %s", got)
	}
}

// TestSubmitSlurm runs SubmitSlurm against a fake sbatch that records its
// arguments.
func TestSubmitSlurm(t *testing.T) {
	dir := t.TempDir()
	sbatchLog := filepath.Join(dir, "sbatch.log")
	fake := filepath.Join(dir, "sbatch")
	script := "#!/bin/sh\necho \"$@\" >> " + sbatchLog + "\nn=$(wc -l < " + sbatchLog + ")\necho \"$((100 + n));cluster\"\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	p := testPlan(t)
	s, _ := OpenStore(filepath.Join(dir, "res"))
	if err := Execute(p, s, []int{0, 1, 2, 4}, func(i int, r Run) (any, error) { return output(r) }, nil); err != nil {
		t.Fatal(err)
	}
	rep, _ := Collect(p, s)
	var msg bytes.Buffer
	o := SlurmOptions{Parallel: 2, CPUs: 2, MemMB: 1000, TimeFactor: 3, GPU: true, Sbatch: fake, ExtraArgs: "--qos=long"}
	sub, err := SubmitSlurm(rep, []string{"/shared/bin/synthetic", "-sweep=fig2", "-results=it's"}, filepath.Join(dir, "slurm"), o, &msg)
	if err != nil {
		t.Fatal(err)
	}
	if sub.ArrayJob != "101" || sub.MergeJob != "102" || sub.Time != "0-00:11:36" {
		t.Errorf("submission %+v", sub)
	}
	calls, _ := os.ReadFile(sbatchLog)
	want := "--parsable --array=3,5-7%2 " + sub.Script + "\n--parsable --dependency=afterany:101 " + sub.MergeScript + "\n"
	if string(calls) != want {
		t.Errorf("sbatch calls:\n%s\nwant\n%s", calls, want)
	}
	arr, _ := os.ReadFile(sub.Script)
	for _, w := range []string{"#SBATCH --cpus-per-task=2\n", "#SBATCH --mem=1000\n", "#SBATCH --time=0-00:11:36\n", "#SBATCH --gres=gpu:1\n",
		"#SBATCH --qos=long\n", "_%a.out\n", `exec /shared/bin/synthetic -sweep=fig2 '-results=it'\''s' -index "$SLURM_ARRAY_TASK_ID"`} {
		if !strings.Contains(string(arr), w) {
			t.Errorf("array script lacks %q:\n%s", w, arr)
		}
	}
	mrg, _ := os.ReadFile(sub.MergeScript)
	if !strings.Contains(string(mrg), `-merge`) || strings.Contains(string(mrg), "gres") {
		t.Errorf("merge script:\n%s", mrg)
	}
	// Everything done: only the merge.
	if err := Execute(p, s, []int{3, 5, 6, 7}, func(i int, r Run) (any, error) { return output(r) }, nil); err != nil {
		t.Fatal(err)
	}
	rep, _ = Collect(p, s)
	sub, err = SubmitSlurm(rep, []string{"/bin/x"}, filepath.Join(dir, "slurm"), o, &msg)
	if err != nil || sub.ArrayJob != "" || sub.MergeJob != "103" {
		t.Errorf("all done: %+v, %v", sub, err)
	}
}

func TestGivenFlags(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	var f Flags
	f.Register(fs)
	fs.String("sweep", "", "")
	fs.Int("epochs", 1, "")
	if err := fs.Parse([]string{"-sweep", "fig2", "-submit", "slurm", "-parallel", "2", "-epochs=3"}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(GivenFlags(fs, FlagNames), " "); got != "-epochs=3 -sweep=fig2" {
		t.Errorf("GivenFlags = %q", got)
	}
}

// TestNoEstimates: a plan without estimates prints "?" and needs -time to be
// submitted.
func TestNoEstimates(t *testing.T) {
	dir := t.TempDir()
	p := Plan{Name: "noest"}
	p.Add(cfg{"rbf", 1, 1}, "a", 0)
	var text bytes.Buffer
	p.WriteText(&text, nil)
	if !strings.Contains(text.String(), "no CPU-time estimates") || !strings.Contains(text.String(), "   0  ?") {
		t.Errorf("plan text:\n%s", text.String())
	}
	s, _ := OpenStore(dir)
	rep, _ := Collect(p, s)
	fake := filepath.Join(dir, "sbatch")
	os.WriteFile(fake, []byte("#!/bin/sh\necho 7\n"), 0o755)
	o := SlurmOptions{CPUs: 1, MemMB: 100, TimeFactor: 3, Sbatch: fake}
	if _, err := SubmitSlurm(rep, []string{"/bin/x"}, dir, o, &text); err == nil || !strings.Contains(err.Error(), "-time") {
		t.Errorf("submission without estimates or -time: %v", err)
	}
	o.Time = "2:00:00"
	sub, err := SubmitSlurm(rep, []string{"/bin/x"}, dir, o, &text)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(sub.Script); !strings.Contains(string(b), "#SBATCH --time=2:00:00\n") {
		t.Errorf("script:\n%s", b)
	}
}

// TestSetJournal: an older journal under another name is read.
func TestSetJournal(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "journal.jsonl"), []byte(`{"config":{"a":1},"final":{"top1":0.5}}`+"\n"), 0o644)
	s, _ := OpenStore(dir)
	if c, _ := s.Load(); len(c.Results) != 0 {
		t.Errorf("journal.jsonl read without SetJournal")
	}
	s.SetJournal("journal.jsonl")
	if c, _ := s.Load(); len(c.Results) != 1 || string(c.Results[`{"a":1}`].Output) != `{"final":{"top1":0.5}}` {
		t.Errorf("with SetJournal: %+v", c.Results)
	}
}

// TestNotRegular: a journal or a result that is not a regular file (a
// directory, a named pipe with no writer) is an error or unreadable, never
// waited on.
func TestNotRegular(t *testing.T) {
	dir := t.TempDir()
	if err := syscallMkfifo(filepath.Join(dir, JournalName)); err != nil {
		t.Skip("no named pipes here:", err)
	}
	s, _ := OpenStore(dir)
	if _, err := s.Load(); err == nil || !strings.Contains(err.Error(), JournalName) {
		t.Errorf("a FIFO journal: %v, want an error naming it", err)
	}
	os.Remove(filepath.Join(dir, JournalName))
	os.MkdirAll(filepath.Join(dir, "runs", FileName("{}")), 0o755)
	c, err := s.Load()
	if err != nil || len(c.Unreadable) != 1 {
		t.Errorf("a directory as a result file: %v, unreadable %v", err, c.Unreadable)
	}
}

// TestExecuteRace: another worker stores the run while this one runs it:
// the same output is accepted (one result stays), a different one stops
// Execute with a ConflictError.
func TestExecuteRace(t *testing.T) {
	p := testPlan(t)
	s, _ := OpenStore(t.TempDir())
	other := func(want string) RunFunc {
		return func(i int, r Run) (any, error) {
			if _, err := s.Put(Result{Key: r.Key, Output: json.RawMessage(`{"x":1}`)}); err != nil {
				return nil, err
			}
			return json.RawMessage(want), nil
		}
	}
	var log bytes.Buffer
	if err := Execute(p, s, []int{0}, other(`{"x":1}`), &log); err != nil || !strings.Contains(log.String(), "another worker stored the same result first") {
		t.Errorf("same output: %v; log %q", err, log.String())
	}
	var conflict *ConflictError
	if err := Execute(p, s, []int{1}, other(`{"x":2}`), nil); !errors.As(err, &conflict) {
		t.Errorf("different output: %v, want a ConflictError", err)
	}
	if c, _ := s.Load(); len(c.Results) != 2 || len(c.Failures) != 0 {
		t.Errorf("%d results, %d failures; want 2 and 0", len(c.Results), len(c.Failures))
	}
}
