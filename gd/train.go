package gd

import (
	"errors"

	G "gorgonia.org/gorgonia"

	"github.com/gdattn/gdattn/losses"
)

// The methods below make *Model a train.Model (an in-context classifier the
// train package's Runner fits and evaluates) without gd importing train.

// BatchSize is the number of contexts B of a minibatch the model was built for.
func (m *Model) BatchSize() int { return m.Batch }

// QueryLogits returns the logits of the query (B, C): the Logits node.
func (m *Model) QueryLogits() *G.Node { return m.Logits }

// QueryTarget returns the one-hot of the query labels (B, C) that Feed
// fills: the Target node.
func (m *Model) QueryTarget() *G.Node { return m.Target }

// CrossEntropyLoss builds the training loss of a categorical model: the
// mean cross-entropy of QueryLogits against QueryTarget, as one op
// (losses.FusedCrossEntropy) with Config.FuseEncoder, else by
// losses.CrossEntropy's chain of ops. train.Runner builds its loss with it;
// each call adds nodes to the graph. A real-valued model has no
// cross-entropy: use QueryLoss.
func (m *Model) CrossEntropyLoss() (*G.Node, error) {
	if m.Cfg.Real() {
		return nil, errors.New("gd: CrossEntropyLoss: the model's likelihood is real-valued; its loss is QueryLoss")
	}
	if m.Cfg.FuseEncoder {
		return losses.FusedCrossEntropy(m.Logits, m.Target)
	}
	return losses.CrossEntropy(m.Logits, m.Target)
}
