# Writes a gdattn checkpoint of a Gaussian GD model (Appendix G) with numpy
# alone: 3 steps of functional GD with the linear kernel, d = 3, d_y = 2,
# N = 4, α = 0.5. A Gaussian model has no W_e and no "c"; its parameters are
# log_alpha and the kernel's (none for the linear kernel). The output of this
# script (numpy 1.24) is gd/testdata/numpy-gaussian-ckpt, which
# TestLoadNumpyGaussian loads and evaluates against gd.ReferenceReal.
import json, os
import numpy as np

out = "numpy-gaussian-ckpt"
params = {"log_alpha": np.array(np.log(0.5))}  # α = exp(log_alpha) = 0.5
os.makedirs(out, exist_ok=True)
manifest = {"format": "gdattn-checkpoint", "version": 1, "dtype": "float64", "params": []}
for name, a in params.items():
    file = name.replace("/", "__") + ".npy"
    np.save(os.path.join(out, file), a)
    manifest["params"].append({"name": name, "shape": list(a.shape), "dtype": "float64", "file": file})
config = {
    "dtype": "float64",
    "gd": {"likelihood": "gaussian", "d": 3, "d_prime": 2, "n": 4, "blocks": 3,
           "kernel": {"name": "linear"}},
}
with open(os.path.join(out, "config.json"), "w") as f:
    json.dump({"manifest": manifest, "config": config}, f, indent=1)
