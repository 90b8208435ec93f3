package tf

import G "gorgonia.org/gorgonia"

// The methods below make *Model a train.Model (an in-context classifier the
// train package's Runner fits and evaluates) without gd importing train.

// BatchSize is the number of contexts B of a minibatch the model was built for.
func (m *Model) BatchSize() int { return m.Batch }

// QueryLogits returns the logits of the query (B, C): the Logits node.
func (m *Model) QueryLogits() *G.Node { return m.Logits }

// QueryTarget returns the one-hot of the query labels (B, C) that Feed
// fills: the Target node.
func (m *Model) QueryTarget() *G.Node { return m.Target }
