"""Seed 003, computeAt by position: t1 is read by t2 and t3, which meet again in t4.

``s[t1].compute_at(s[t3], 1)`` computes t1 inside t3's outer loop. t1 need not be t3's direct
producer; its loops are *replayed* from t3's split; the other reader t2 must follow (it reads
t1, which now exists only inside that loop), and so do the stages up to the *common consumer*
t4, which gets the same outer loop without being computed at anything. t5, after t4, is left
alone. The explorer shows, for the compute_at step, what was replayed and attached where.

    tessel explain examples/seed003_compute_at.py -o compute_at.html
"""

import tessel
from tessel import te

n = 129
t0 = te.placeholder((n,), name="t0")
t1 = te.compute((n,), lambda i: t0[i] * 0.5, name="t1")
t2 = te.compute((n,), lambda i: t1[i] * -1.0, name="t2")
t3 = te.compute((n,), lambda i: t1[i] * -2.0, name="t3")
t4 = te.compute((n,), lambda i: t2[i] + t3[i], name="t4")
t5 = te.compute((n,), lambda i: t4[i] * 5.0, name="t5")
s = te.create_schedule([t3.op, t4.op, t5.op])
xo, xi = s[t3].split(t3.op.axis[0], factor=32)
s[t1].compute_at(s[t3], 1)
print(s.position_log[-1].to_text())

print(tessel.lower(s, [t0, t3, t4, t5], simple_mode=True))
