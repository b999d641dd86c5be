// The <@file:ref_id|display_path> token of prompt_text (spec §16.2), read
// back for display: a port of protocol/fileref's Parse, with the same
// parity rule (a "<@" is escaped iff an odd number of backslashes stand
// right before it). The UI never composes prompt_text: it sends segments
// (ui.prompt) and the master escapes and composes. A test runs this parser
// against the Go one on composed prompts (web/fileref_test.go).

const OPEN = '<@';
const PREFIX = '<@file:';

function isRefIDChar(c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c === '_' || c === '-';
}

/**
 * parsePrompt splits prompt_text into parts: {text} for literal text
 * (unescaped) and {file, display} for a token whose ref_id names an entry of
 * refs (file is that entry). With anyRef, a well-formed token whose ref_id is
 * not in refs still becomes a file part (file null): the master's snapshot
 * keeps prompts without their file_references, and only the master composes
 * tokens, so such a token was picked in the popup.
 */
export function parsePrompt(s, refs = [], { anyRef = false } = {}) {
  const byID = new Map();
  for (const r of refs || []) if (!byID.has(r.ref_id)) byID.set(r.ref_id, r);
  const parts = [];
  let text = '';
  const flush = () => {
    if (text !== '') parts.push({ text });
    text = '';
  };
  // opener handles the unescaped "<@" at i and returns where to go on.
  const opener = (i) => {
    if (s.startsWith(PREFIX, i)) {
      const idStart = i + PREFIX.length;
      let idEnd = idStart;
      while (idEnd < s.length && isRefIDChar(s[idEnd])) idEnd++;
      if (idEnd > idStart && idEnd < s.length && s[idEnd] === '|') {
        const disp = idEnd + 1;
        const end = s.indexOf('>', disp);
        if (end > disp) {
          const id = s.slice(idStart, idEnd);
          const ref = byID.get(id);
          if (ref || anyRef) {
            flush();
            parts.push({ file: ref || null, refId: id, display: s.slice(disp, end) });
          } else {
            text += s.slice(i, end + 1); // unmapped: verbatim
          }
          return end + 1;
        }
      }
    }
    text += OPEN;
    return i + OPEN.length;
  };
  let i = 0;
  while (i < s.length) {
    const c = s[i];
    if (c === '\\') {
      let j = i + 1;
      while (j < s.length && s[j] === '\\') j++;
      const n = j - i;
      if (!s.startsWith(OPEN, j)) {
        text += '\\'.repeat(Math.floor(n / 2) + (n % 2)); // an odd run keeps its stray backslash
        i = j;
      } else if (n % 2 === 1) {
        text += '\\'.repeat(Math.floor(n / 2)) + OPEN; // escaped opener
        i = j + OPEN.length;
      } else {
        text += '\\'.repeat(n / 2);
        i = opener(j);
      }
    } else if (c === '<') {
      if (s.startsWith(OPEN, i)) {
        i = opener(i);
      } else {
        text += '<';
        i++;
      }
    } else {
      let j = i + 1;
      while (j < s.length && s[j] !== '\\' && s[j] !== '<') j++;
      text += s.slice(i, j);
      i = j;
    }
  }
  flush();
  return parts;
}
