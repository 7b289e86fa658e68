#!/usr/bin/env python3
"""Embed the shared golden KB corpus through an OpenAI-compatible embeddings
API (default: ../shared/tools/embed-server on 127.0.0.1:8089) for the HNSW
recall measurement (`cargo run --release -p root-index --example hnsw_recall`).

Writes <out>.f32 (little-endian float32, n x dims) and <out>.json ({"ids", "queries"}):
pages are split into ~1500-char pieces of "title\\n\\ntext"; query vectors follow.
Standard library only.
"""
import html, json, re, sys, urllib.request

golden, out = sys.argv[1], sys.argv[2]
base = sys.argv[3] if len(sys.argv) > 3 else "http://127.0.0.1:8089/v1"
data = json.load(open(golden))

def text_of(h):
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", h))).strip()

docs, ids = [], []
for p in data["pages"]:
    t = text_of(p["content_html"])
    for i in range(0, max(len(t), 1), 1300):
        docs.append(p["title"] + "\n\n" + t[i:i + 1500])
        ids.append(f'{p["slug"]}#{i // 1300}')
queries = [q["query"] for q in data["queries"]]

def embed(batch):
    req = urllib.request.Request(base + "/embeddings", method="POST",
        data=json.dumps({"model": "text-embedding-3-large", "input": batch, "dimensions": 3072}).encode(),
        headers={"Content-Type": "application/json", "Authorization": "Bearer unused"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return [d["embedding"] for d in json.load(r)["data"]]

import array
vecs = array.array("f")
texts = docs + queries
for i in range(0, len(texts), 100):
    for v in embed(texts[i:i + 100]):
        vecs.extend(v)
    print(f"{min(i + 100, len(texts))}/{len(texts)}", file=sys.stderr)
with open(out + ".f32", "wb") as f:
    vecs.tofile(f)
json.dump({"ids": ids, "queries": queries, "dims": 3072}, open(out + ".json", "w"))
