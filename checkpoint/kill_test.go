package checkpoint

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"gorgonia.org/tensor"

	"github.com/gdattn/gdattn/graph"
)

// Environment of TestSaveKillHelper (set by TestSaveKillAnywhere).
const (
	killDirEnv  = "GDATTN_TEST_KILL_DIR"
	killSizeEnv = "GDATTN_TEST_KILL_SIZE"
)

// killsEnv sets the number of kills per model size of TestSaveKillAnywhere
// (default 12): GDATTN_SAVE_KILLS=300 go test ./checkpoint -run KillAnywhere
// is the full run.
const killsEnv = "GDATTN_SAVE_KILLS"

// killScope is a model of n float64 parameters (8n bytes of .npy data) in
// one matrix plus a bias, with Adam moments for both.
func killScope(t testing.TB, n int, seed uint64) (*graph.Scope, SaveOptions) {
	s := must(graph.NewScope(graph.Float64, seed))
	w := must(s.Sub("lin").Param("w", tensor.Shape{n / 8, 8}, graph.Normal(1)))
	b := must(s.Sub("lin").Param("b", tensor.Shape{8}, graph.Normal(1)))
	st := &OptimState{Step: int(seed), M: map[string][]float64{}, V: map[string][]float64{}}
	for _, p := range []string{w.Name(), b.Name()} {
		k := n
		if p == b.Name() {
			k = 8
		}
		st.M[p], st.V[p] = make([]float64, k), make([]float64, k)
		for i := range k {
			st.M[p][i], st.V[p][i] = float64(i)*1e-3, float64(seed)
		}
	}
	return s, SaveOptions{Optim: st}
}

// TestSaveKillHelper is not a test: run by TestSaveKillAnywhere as a child
// process, it saves a model of $GDATTN_TEST_KILL_SIZE parameters to
// $GDATTN_TEST_KILL_DIR again and again, alternating two sets of values,
// until the parent kills it.
func TestSaveKillHelper(t *testing.T) {
	dir := os.Getenv(killDirEnv)
	if dir == "" {
		t.Skip("helper process only")
	}
	n, err := strconv.Atoi(os.Getenv(killSizeEnv))
	if err != nil {
		t.Fatal(err)
	}
	s1, o1 := killScope(t, n, 1)
	s2, o2 := killScope(t, n, 2)
	fmt.Println("ready")
	for i := 0; ; i++ {
		s, o := s1, o1
		if i%2 == 1 {
			s, o = s2, o2
		}
		if err := Save(dir, s, modelConfig{D: 1 + i%2}, o); err != nil {
			fmt.Println(err)
			os.Exit(3)
		}
	}
}

// TestSaveKillAnywhere kills a process that saves a model over and over
// (kill -9 at a random instant, for a 16 KiB and a 2 MiB model) many times
// in one directory. After every kill dir must hold a complete checkpoint of
// one of the two saves, and after all of them one clean save must leave
// nothing beside dir.
func TestSaveKillAnywhere(t *testing.T) {
	if testing.Short() {
		t.Skip("starts subprocesses")
	}
	kills := 12
	if v := os.Getenv(killsEnv); v != "" {
		var err error
		if kills, err = strconv.Atoi(v); err != nil || kills < 1 {
			t.Fatalf("%s=%q: want a count > 0", killsEnv, v)
		}
	}
	for _, size := range []struct {
		name string
		n    int
	}{{"16KiB", 2048}, {"2MiB", 262144}} {
		t.Run(size.name, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "ckpt")
			s, o := killScope(t, size.n, 1)
			begin := time.Now()
			if err := Save(dir, s, modelConfig{D: 1}, o); err != nil {
				t.Fatal(err)
			}
			// Kill within the first few saves of each child, anywhere in
			// them: uniformly over three save times.
			window := max(3*time.Since(begin), 3*time.Millisecond)
			rng := rand.New(rand.NewPCG(uint64(size.n), 32))
			leftBehind, maxLeft := 0, 0
			for k := range kills {
				cmd := exec.Command(os.Args[0], "-test.run=^TestSaveKillHelper$")
				cmd.Env = append(os.Environ(), killDirEnv+"="+dir, killSizeEnv+"="+strconv.Itoa(size.n))
				out, err := cmd.StdoutPipe()
				if err != nil {
					t.Fatal(err)
				}
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				line, _ := bufio.NewReader(out).ReadString('\n')
				if line != "ready\n" {
					cmd.Process.Kill()
					cmd.Wait()
					t.Fatalf("kill %d: the helper said %q", k, line)
				}
				time.Sleep(time.Duration(rng.Int64N(int64(window))))
				cmd.Process.Kill() // SIGKILL
				cmd.Wait()
				c, err := Read(dir)
				if err != nil {
					t.Fatalf("kill %d: %v", k, err)
				}
				var cfg modelConfig
				if err := c.DecodeConfig(&cfg); err != nil || (cfg.D != 1 && cfg.D != 2) || c.Optim == nil || c.Optim.Step != cfg.D {
					t.Fatalf("kill %d: config %+v (%v), optimiser state of another save", k, cfg, err)
				}
				ents, _ := os.ReadDir(parent)
				if len(ents) > 1 {
					leftBehind++
				}
				maxLeft = max(maxLeft, len(ents)-1)
			}
			t.Logf("%d kills within %v of the child's first save: %d left something beside dir (at most %d directories at once)", kills, window, leftBehind, maxLeft)
			if err := Save(dir, s, modelConfig{D: 1}, o); err != nil {
				t.Fatal(err)
			}
			ents, err := os.ReadDir(parent)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			if !slices.Equal(names, []string{"ckpt"}) {
				t.Errorf("after a clean save the parent holds %q, want only ckpt", names)
			}
			if _, err := Read(dir); err != nil {
				t.Error(err)
			}
		})
	}
}
