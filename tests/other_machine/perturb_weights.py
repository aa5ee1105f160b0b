"""IPython start-up file that makes a kernel behave like another machine's (see ``notebooks/conftest.py``).

Every initialisation of a linear or convolutional layer is perturbed by a relative 1e-7 (a float32 rounding
step), drawn from a generator of its own so that the rest of the random stream is untouched. A trained network's
final numbers then drift as they do between two CPUs whose float rounding differs; the seeds, batches and label
noise stay the same."""

import torch

_generator = torch.Generator().manual_seed(20261124)
_RELATIVE = 1e-7


def _perturbed(reset):
    def reset_parameters(self):
        reset(self)
        with torch.no_grad():
            for p in (self.weight, self.bias):
                if p is not None and p.is_floating_point():
                    noise = torch.randn(p.shape, generator=_generator, dtype=torch.float64)
                    p.mul_((1 + _RELATIVE * noise).to(p.dtype, copy=False).to(p.device))
    return reset_parameters


for _layer in (torch.nn.Linear, torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.ConvTranspose1d, torch.nn.ConvTranspose2d):
    _layer.reset_parameters = _perturbed(_layer.reset_parameters)
