// The chat widget's own Markdown renderer, used where the front end has no JupyterLab
// rendermime (VS Code, Colab): headings, lists, tables, code, emphasis, links, escaping.
import { describe, expect, it } from 'vitest';

import { renderMarkdown } from '../../agi_jupyter/kernel/static/chat.js';

describe('the widget renderer without JupyterLab', () => {
  it('renders headings, lists, tables and code like the panel shows them', () => {
    const html = renderMarkdown(
      '# Plan\n\nRead **the** `file`:\n\n1. load\n2. plot\n\n- a\n- b\n\n| x | y |\n|---|---|\n| 1 | 2 |\n\n```python\nprint("<hi>")\n```'
    );
    expect(html).toBe(
      '<h1>Plan</h1><p>Read <strong>the</strong> <code>file</code>:</p><ol><li>load</li><li>plot</li></ol>' +
        '<ul><li>a</li><li>b</li></ul>' +
        '<table><thead><tr><th>x</th><th>y</th></tr></thead><tbody><tr><td>1</td><td>2</td></tr></tbody></table>' +
        '<pre><code class="language-python">print(&quot;&lt;hi&gt;&quot;)</code></pre>'
    );
  });

  it('escapes HTML and links only http(s) URLs', () => {
    expect(renderMarkdown('<img src=x onerror=alert(1)> [a](javascript:x) [b](https://e.org)')).toBe(
      '<p>&lt;img src=x onerror=alert(1)&gt; [a](javascript:x) <a href="https://e.org" target="_blank" rel="noopener">b</a></p>'
    );
  });
});
