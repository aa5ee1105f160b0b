"""Helper run by test_train.py in a subprocess: trains a small model with a checkpoint, slowly enough to be
killed in the middle, and saves the final weights."""

import sys
import time

import torch

from dml_tutorial import data, losses, models, sampling, train

checkpoint, out, epochs, delay = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
train.seed_everything(3, threads=1, deterministic=True)  # same initial weights; exact on CUDA too
splits = data.load_dataset("digits", split="classes")
model = models.ConvNet((1, 8, 8), dim=16, width=(8, 16), hidden=32, dropout=0.2)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
train.fit(model, lambda z, y: losses.triplet_loss(z, y, negatives="semihard-random"), splits.train,
          epochs=epochs, sampler=sampling.PKSampler(splits.train.labels, 6, 8, seed=3, batches_per_epoch=6),
          optimizer=opt, scheduler=sched, seed=3, checkpoint=checkpoint, progress=False,
          evaluate=lambda m: time.sleep(delay) or {})
torch.save(model.state_dict(), out)
