package data

import (
	"errors"
	"fmt"
	"strings"
)

// ReadCorpora reads several corpora with [ReadCorpus] and returns their
// stories in the order given (all of the first corpus, then the second, ...),
// as the paper trains on TinyStories combined with a collection of
// children's stories. paths is a comma-separated list; cfg.Gutenberg applies
// to every Gutenberg directory in it. A single path behaves as ReadCorpus.
func ReadCorpora(paths string, cfg CorpusConfig) ([]string, error) {
	if strings.TrimSpace(paths) == "" {
		return nil, errors.New("data: corpus path is empty")
	}
	var out []string
	seen := map[string]bool{}
	for _, p := range strings.Split(paths, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			return nil, fmt.Errorf("data: corpus list %q has an empty entry", paths)
		}
		if seen[p] {
			return nil, fmt.Errorf("data: corpus %s is listed twice", p)
		}
		seen[p] = true
		stories, err := ReadCorpus(p, cfg)
		if err != nil {
			return nil, err
		}
		out = append(out, stories...)
	}
	return out, nil
}
