# Writes a gdattn checkpoint of a GD model with numpy alone: the example of
# "Model configs" in docs/checkpoints.md. gd.Load("ckpt", batch) reads it; the output
# of this script (numpy 1.24) is gd/testdata/numpy-ckpt, which
# TestLoadHandWritten compares byte for byte with the files it writes.
import json, os
import numpy as np

d, d_prime, C, N = 2, 3, 4, 5
params = {  # name in the model's scope -> value
    "we": np.arange(12, dtype=np.float64).reshape(d_prime, C) / 10,  # W_e (d', C)
    "log_alpha": np.array(np.log(2.0)),  # the GD step α = 2
    "kernel/log_gamma": np.array(0.0),  # the softmax kernel's g = 1
}
os.makedirs("ckpt", exist_ok=True)
manifest = {"format": "gdattn-checkpoint", "version": 1, "dtype": "float64", "params": []}
for name, a in params.items():
    file = name.replace("/", "__") + ".npy"
    np.save(os.path.join("ckpt", file), a)
    manifest["params"].append({"name": name, "shape": list(a.shape), "dtype": "float64", "file": file})
config = {
    "dtype": "float64",
    "gd": {"d": d, "d_prime": d_prime, "c": C, "n": N, "form": "interleaved", "blocks": 2,
           "kernel": {"name": "softmax", "gamma": 1, "learnable": True}},
}
with open("ckpt/config.json", "w") as f:
    json.dump({"manifest": manifest, "config": config}, f, indent=1)
