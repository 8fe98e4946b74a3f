import os
import subprocess
import sys

from conftest import HERE, REPO
from fakes import Cluster
from paramserver import recordio
from paramserver.client import ma


def test_train_mlp_example_trains_every_task_and_reports_the_evaluation():
    path = os.path.join(HERE, "fixtures", "dense-gzip.recordio")
    c = Cluster(n=2)
    c.master.todo = [ma.Task(id=i, epoch=1, chunks=[ma.Chunk(path=path, offset=o, length=n, records=r)])
                     for i, (o, n, r) in enumerate(recordio.chunks(path))]
    try:
        p = subprocess.run([sys.executable, os.path.join(REPO, "examples", "python", "train_mlp.py"),
                            "--master", c.address, "--trainer-id", "py-example", "--data", path, "--test", path,
                            "--hidden", "8", "--batch-size", "4"], capture_output=True, text=True, timeout=120)
    finally:
        c.close()
    assert p.returncode == 0, p.stderr
    last = p.stdout.strip().splitlines()[-1]
    assert last.startswith("PYRESULT trainer=py-example tasks=3 records=12 accuracy="), p.stdout
    assert list(c.master.dataset.globs) == [path] and c.master.evaluation.samples == 12
    assert [s.name for s in c.master.joins[0].parameters] == ["hidden1.w", "hidden1.b", "out.w", "out.b"]
