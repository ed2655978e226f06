"""Run from the repository root: python d2lmini/corpus/make_corpus.py

Extract the book's English prose (markdown cells of chapters 01-08 and intro.md) into
d2lmini/corpus/book.txt: code, display math, tables, headings and links removed, inline
math kept as plain symbols, ASCII only."""
import glob, json, re, textwrap

def inline_math(m):
    s = m.group(1)
    s = re.sub(r'\\(text|mathrm|operatorname|mathbf|mathbb|boldsymbol|mathcal|hat|tilde'
               r'|bar)\{([^{}]*)\}', r'\2', s)
    s = re.sub(r'\\(left|right|big|Big|,|;|!|quad|qquad)', ' ', s)
    s = (s.replace(r'\cdot', '*').replace(r'\times', 'x').replace(r'\top', 'T')
         .replace(r'\infty', 'inf'))
    s = (re.sub(r'\\in(?![a-z])', ' in ', s).replace(r'\le', '<=').replace(r'\ge', '>=')
         .replace(r'\approx', '~').replace(r'\to', '->'))
    s = re.sub(r'\\([A-Za-z]+)', r'\1', s)
    s = s.replace('{', '').replace('}', '').replace('\\', '')
    return s

texts = []
for f in sorted(glob.glob('chapters/0[1-8]_*.ipynb')):
    for c in json.load(open(f))['cells']:
        if c['cell_type'] == 'markdown':
            texts.append(''.join(c['source']))
texts.append(open('intro.md').read())
out = []
for t in texts:
    t = re.sub(r'```.*?```', '\n\n', t, flags=re.S)
    t = re.sub(r'\$\$.*?\$\$', '\n\n', t, flags=re.S)
    t = re.sub(r'\$([^$\n]*)\$', inline_math, t)
    t = re.sub(r'<[^>]+>', ' ', t)
    t = re.sub(r'!\[[^\]]*\]\([^)]*\)', ' ', t)
    t = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', t)
    t = re.sub(r'\n\s*(?:[*-]|\d+\.)\s+', '\n\n', t)        # list items: own paragraphs
    for para in re.split(r'\n\s*\n', t):
        lines = [l for l in para.split('\n')
                 if not l.lstrip().startswith(('|', '#', '>'))]
        para = ' '.join(l.strip() for l in lines)
        para = re.sub(r'^\s*(?:[*-]|\d+\.)\s+', '', para)
        para = para.replace('**', '').replace('`', '').replace('*', ' ')
        for a, b in [('\u2019', "'"), ('\u2018', "'"), ('\u201c', '"'),
                     ('\u201d', '"'), ('\u2014', ' - '), ('\u2013', '-'),
                     ('\u2192', '->'), ('\u2026', '...'), ('\u2248', '~'),
                     ('\u2264', '<='), ('\u2265', '>='), ('\u00d7', 'x'),
                     ('\u221a', 'sqrt '), ('\u00e4', 'a'), ('\u00b7', '*'),
                     ('\u2212', '-')]:
            para = para.replace(a, b)
        para = re.sub(r'[^\x20-\x7e]', '', para)
        para = re.sub(r'\(\s*[,;]?\s*\)', '', para)
        para = re.sub(r'\s+([,.;:?!)])', r'\1', para)
        para = re.sub(r'\s+', ' ', para).strip()
        if len(para) > 80 and para.count(' ') > 10:
            out.append(para)
text = '\n\n'.join(textwrap.fill(p, 88) for p in out) + '\n'
open('d2lmini/corpus/book.txt', 'w').write(text)
print(len(text), 'characters,', len(out), 'paragraphs,', len(set(text)),
      'distinct characters')
