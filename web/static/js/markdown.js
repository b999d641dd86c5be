// Markdown for the agent's text, which is untrusted: it may carry whatever a
// model or a file it read put there.
//
// marked turns Markdown into HTML with raw HTML escaped (the html renderer
// below), links limited to http(s) and mailto, and images shown as links
// (the page loads nothing from elsewhere). highlight.js colours fenced code
// whose language it knows (it escapes the code itself). DOMPurify then
// sanitises the result against an allow-list of tags and attributes before
// it reaches the page, as TrustedHTML: under the page's Trusted Types policy
// this function is the only way HTML can be set at all.

import { Marked } from '../vendor/marked/marked.esm.js';
import DOMPurify from '../vendor/dompurify/purify.es.mjs';
import hljs from '../vendor/highlight/highlight.min.js';

const ESC = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** escapeHTML escapes text for HTML. */
export function escapeHTML(s) {
  return String(s).replace(/[&<>"']/g, (c) => ESC[c]);
}

/** safeURL returns href when it is an absolute http(s) or mailto URL, else "". */
export function safeURL(href) {
  try {
    const u = new URL(String(href));
    return u.protocol === 'http:' || u.protocol === 'https:' || u.protocol === 'mailto:' ? u.href : '';
  } catch {
    return '';
  }
}

/** MAX_HIGHLIGHT is the largest code block coloured; larger ones stay plain. */
const MAX_HIGHLIGHT = 100_000;

/** highlight returns the HTML of code coloured as lang, or escaped when unknown. */
export function highlight(code, lang) {
  const l = String(lang || '').toLowerCase();
  if (l && code.length <= MAX_HIGHLIGHT && hljs.getLanguage(l)) {
    try {
      return { html: hljs.highlight(code, { language: l, ignoreIllegals: true }).value, lang: l };
    } catch {
      // fall through to plain text
    }
  }
  return { html: escapeHTML(code), lang: '' };
}

const marked = new Marked({ gfm: true, breaks: false, async: false });
marked.use({
  renderer: {
    html({ text }) {
      return escapeHTML(text);
    },
    code({ text, lang }) {
      const first = String(lang || '').match(/^\S*/)[0];
      const { html, lang: l } = highlight(String(text).replace(/\n$/, ''), first);
      const cls = l ? ` class="hljs language-${escapeHTML(l)}"` : ' class="hljs"';
      return `<pre><code${cls}>${html}</code></pre>\n`;
    },
    link({ href, title, tokens }) {
      const inner = this.parser.parseInline(tokens);
      const url = safeURL(href);
      if (!url) return inner;
      const t = title ? ` title="${escapeHTML(title)}"` : '';
      return `<a href="${escapeHTML(url)}"${t} target="_blank" rel="noopener noreferrer nofollow">${inner}</a>`;
    },
    image({ href, text }) {
      const url = safeURL(href);
      const label = escapeHTML(text || href || 'image');
      return url ? `<a href="${escapeHTML(url)}" target="_blank" rel="noopener noreferrer nofollow">[image: ${label}]</a>` : `[image: ${label}]`;
    },
  },
});

const PURIFY = {
  ALLOWED_TAGS: ['p', 'br', 'hr', 'a', 'em', 'strong', 'del', 's', 'code', 'pre', 'span', 'ul', 'ol', 'li', 'blockquote',
    'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'input', 'sup', 'sub'],
  ALLOWED_ATTR: ['href', 'title', 'class', 'target', 'rel', 'start', 'align', 'type', 'checked', 'disabled'],
  ALLOWED_URI_REGEXP: /^(?:https?:|mailto:)/i,
  ALLOW_DATA_ATTR: false,
  RETURN_TRUSTED_TYPE: true,
};

// Task-list checkboxes are the only inputs Markdown makes: keep them inert.
DOMPurify.addHook('uponSanitizeElement', (node, data) => {
  if (data.tagName === 'input' && node.getAttribute && node.getAttribute('type') !== 'checkbox') node.remove();
});

/** MAX_MARKDOWN is the longest text rendered as Markdown; longer is plain. */
const MAX_MARKDOWN = 400_000;

/** renderMarkdown sets el's content to the Markdown text, sanitised. */
export function renderMarkdown(el, text) {
  if (text.length > MAX_MARKDOWN) {
    el.classList.add('plain');
    el.textContent = text;
    return;
  }
  el.classList.remove('plain');
  const html = marked.parse(text);
  el.innerHTML = DOMPurify.sanitize(html, PURIFY);
  for (const box of el.querySelectorAll('input')) box.disabled = true;
}
