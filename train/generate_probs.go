package train

import (
	"fmt"

	"github.com/gdattn/gdattn/data"
)

// Probs returns the next-token probabilities after each context:
// softmax of the logits [Generator.Next] returns (data.Probabilities), one
// row of VocabSize probabilities summing to 1 per context.
func (g *Generator) Probs(contexts [][]int) ([][]float64, error) {
	return g.rows(contexts, data.Probabilities)
}

// LogProbs returns the next-token log-probabilities after each context
// (data.LogProbabilities of [Generator.Next]'s logits): what scoring a
// continuation sums.
func (g *Generator) LogProbs(contexts [][]int) ([][]float64, error) {
	return g.rows(contexts, data.LogProbabilities)
}

func (g *Generator) rows(contexts [][]int, f func([]float64) ([]float64, error)) ([][]float64, error) {
	logits, err := g.Next(contexts)
	if err != nil {
		return nil, err
	}
	out := make([][]float64, len(logits))
	for i, l := range logits {
		if out[i], err = f(l); err != nil {
			return nil, fmt.Errorf("train: generate: context %d: %w", i, err)
		}
	}
	return out, nil
}
