// Tags and notes (docs/api.md: the spec fields `tags` and `notes`, on
// experiments and on trials): chips and text on the experiment and trial
// pages and in the experiments list, and an editor for those who may
// change them (api.canSteer: the owner or an admin), which sends PATCH
// /experiments/{id} or PATCH /trials/{id} with {tags, notes} (api.js adds
// the session's CSRF header). Its errors go to the error banner.
import * as api from '../api.js';
import { h, setText } from '../dom.js';
import { clearError, reportError } from '../shell.js';

// docs/api.md, "tags": at most 32, each 1..64 bytes of printable text
// without commas. rungd checks them too; this only spares a round trip.
const TAGS_MAX = 32;
const TAG_BYTES_MAX = 64;
const NOTES_BYTES_MAX = 65536;

const bytes = (s) => new TextEncoder().encode(s).length;

/** Why tag t cannot be added to `tags`, or '' when it can. */
export function tagProblem(t, tags) {
  if (!t) return 'a tag cannot be empty';
  if (t.includes(',')) return `tag "${t}": no commas`;
  if (bytes(t) > TAG_BYTES_MAX) return `tag "${t.slice(0, 20)}…" is over ${TAG_BYTES_MAX} bytes`;
  // Control characters are not printable text.
  if (/[\u0000-\u001f\u007f]/.test(t)) return `tag "${t}": printable characters only`;
  if (tags.length >= TAGS_MAX && !tags.includes(t)) return `at most ${TAGS_MAX} tags`;
  return '';
}

/** The address of the experiments list filtered by tag t. */
export function tagHref(t) {
  return `#/?tag=${encodeURIComponent(t)}`;
}

/** A chip per tag (data-tag); a link to the list filtered by it when
 * `link` (an experiment's tags). */
export function tagChips(tags, { link = true } = {}) {
  return (Array.isArray(tags) ? tags : []).map((t) => (link
    ? h('a', { class: 'tag-chip', testid: 'tag-chip', 'data-tag': t, href: tagHref(t), title: `experiments tagged ${t}`, text: t })
    : h('span', { class: 'tag-chip', testid: 'tag-chip', 'data-tag': t, text: t })));
}

/**
 * The tags and notes of one experiment or trial. kind: 'experiment' or
 * 'trial' (test ids exp-tags / exp-notes or trial-tags / trial-notes);
 * onSaved(obj): the object PATCH answered. Returns {el, update(obj,
 * canEdit)}; hidden until an object with tags or notes comes (a rungd
 * older than them).
 */
export function createTagsNotes(kind, id, { onSaved } = {}) {
  const prefix = kind === 'experiment' ? 'exp' : 'trial';
  const source = `${prefix}-meta`; // the banner's name for its errors
  let obj = null;
  let editing = false;
  let busy = false;
  let draft = [];

  const chips = h('span', { class: 'tag-list', testid: `${prefix}-tags` });
  const notes = h('div', { class: 'notes', testid: `${prefix}-notes` });
  const edit = h('button', { type: 'button', class: 'link-button', testid: 'meta-edit', hidden: true, onclick: open }, 'Edit tags and notes');

  const draftChips = h('span', { class: 'tag-list', testid: 'tag-draft' });
  const tagInput = h('input', { type: 'text', testid: 'tag-input', placeholder: 'new tag', 'aria-label': 'new tag', maxlength: 64,
    onkeydown: (ev) => {
      if (ev.key === 'Enter') {
        ev.preventDefault();
        addTag();
      }
    } });
  const add = h('button', { type: 'button', testid: 'tag-add', onclick: addTag }, 'Add tag');
  const notesInput = h('textarea', { testid: 'notes-input', rows: 4, 'aria-label': 'notes', placeholder: 'notes' });
  const save = h('button', { type: 'button', testid: 'meta-save', onclick: onSave }, 'Save');
  const cancel = h('button', { type: 'button', testid: 'meta-cancel', onclick: close }, 'Cancel');
  const form = h('div', { class: 'meta-form', testid: 'meta-form', hidden: true },
    h('div', { class: 'toolbar' }, draftChips, tagInput, add),
    notesInput,
    h('div', { class: 'toolbar' }, save, cancel));

  const el = h('div', { class: 'tags-notes', testid: `${prefix}-meta`, hidden: true },
    h('div', { class: 'tags-row' }, h('span', { class: 'muted', text: 'Tags ' }), chips, ' ', edit),
    notes, form);

  function renderDraft() {
    draftChips.replaceChildren(...draft.map((t) => h('span', { class: 'tag-chip', 'data-tag': t }, t,
      h('button', { type: 'button', class: 'tag-remove', testid: 'tag-remove', 'data-tag': t, title: `remove ${t}`,
        'aria-label': `remove tag ${t}`, onclick: () => {
          draft = draft.filter((x) => x !== t);
          renderDraft();
        } }, '\u00d7'))));
  }

  function addTag() {
    const t = tagInput.value.trim();
    if (draft.includes(t)) {
      tagInput.value = '';
      return;
    }
    const why = tagProblem(t, draft);
    if (why) {
      reportError(source, new Error(why));
      return;
    }
    clearError(source);
    draft.push(t);
    tagInput.value = '';
    renderDraft();
  }

  function open() {
    if (!obj) return;
    editing = true;
    draft = [...(obj.tags || [])];
    notesInput.value = obj.notes || '';
    renderDraft();
    form.hidden = false;
    edit.hidden = true;
    tagInput.focus();
  }

  function close() {
    editing = false;
    form.hidden = true;
    clearError(source);
    render();
  }

  async function onSave() {
    if (busy) return;
    if (tagInput.value.trim()) addTag(); // typed but not added yet
    const text = notesInput.value;
    if (bytes(text) > NOTES_BYTES_MAX) {
      reportError(source, new Error(`notes are over ${NOTES_BYTES_MAX} bytes`));
      return;
    }
    busy = true;
    save.disabled = true;
    try {
      const change = { tags: draft, notes: text };
      const next = kind === 'experiment' ? await api.patchExperiment(id, change) : await api.patchTrial(id, change);
      clearError(source);
      if (next) obj = next;
      close();
      if (onSaved && next) onSaved(next);
    } catch (e) {
      reportError(source, e); // the form stays open with what was typed
    } finally {
      busy = false;
      save.disabled = false;
    }
  }

  let canEdit = false;
  let shown = '';
  function render() {
    const tags = Array.isArray(obj.tags) ? obj.tags : [];
    const text = typeof obj.notes === 'string' ? obj.notes : '';
    const key = JSON.stringify([tags, text]);
    if (key !== shown) {
      shown = key;
      chips.replaceChildren(...(tags.length ? tagChips(tags, { link: kind === 'experiment' }) : [h('span', { class: 'muted', text: 'none' })]));
      setText(notes, text); // text, never markup
      notes.classList.toggle('empty-notes', !text);
      notes.hidden = !text;
    }
    edit.hidden = !canEdit || editing;
  }

  return {
    el,
    /** obj: the experiment or trial just read; canEdit: whether the page's
     * user may change it (the API refuses anyway). */
    update(next, may) {
      if (!next || (!('tags' in next) && !('notes' in next))) return; // a rungd without them
      obj = next;
      canEdit = !!may;
      el.hidden = false;
      if (editing && !canEdit) close();
      render();
    },
  };
}
