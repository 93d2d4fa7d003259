"""Training throughput: the 27.5M BART at 384/32 tokens (batch 8) and the cross-encoder at 256 tokens (batch 16), random tokens, 2 threads."""
import time, torch, sys
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
from ambigqa_train.warm_start import build_bart, build_cross_encoder
torch.set_num_threads(2); torch.manual_seed(0)
m, tok = build_bart(); m.train(); opt = torch.optim.AdamW(m.parameters(), 1e-4)
B=8
x = torch.randint(1000, 30000, (B, 384)); y = torch.randint(1000, 30000, (B, 32))
def step():
    loss = m(input_ids=x, attention_mask=torch.ones_like(x), labels=y).loss; loss.backward(); opt.step(); opt.zero_grad()
step(); t=time.time(); n=5
for _ in range(n): step()
print("bart 384/32 examples/s", round(B*n/(time.time()-t),2), "params", sum(p.numel() for p in m.parameters()))
c, _ = build_cross_encoder(); c.train(); opt = torch.optim.AdamW(c.parameters(), 3e-5)
B=16; x = torch.randint(1000, 30000, (B, 256))
def step2():
    loss = c(input_ids=x, attention_mask=torch.ones_like(x)).logits.pow(2).mean(); loss.backward(); opt.step(); opt.zero_grad()
step2(); t=time.time(); n=4
for _ in range(n): step2()
print("cross-encoder 256 pairs/s", round(B*n/(time.time()-t),2))
