// <cortado-answer>: one finished answer (its explanation, SQL, chart, table and insights) in a
// shadow root of its own, with the answer view's stylesheet inside it, so the page around it (a
// dashboard's buttons, tables and headings) cannot restyle it; the theme still reaches it
// through the inherited --ctd-* custom properties.
//
//   const view = document.createElement('cortado-answer');
//   view.options = { feedback: false, downloads: false };   // renderAnswer's options
//   view.reply = reply;                                     // an /api/query reply (or a legacy one)
//   tile.append(view); await view.drawn;
//
// Importing this module defines the element once; the widget script does not import it (a
// host page's registry is not ours to write in).
import { adoptStyles, el } from '../lib/dom.js';
import { renderAnswer } from './index.js';
import { ANSWER_CSS } from './styles.js';

export class CortadoAnswer extends HTMLElement {
  #body;
  #view;
  #reply;
  #options = {};

  constructor() {
    super();
    const root = this.attachShadow({ mode: 'open' });
    adoptStyles(root, ANSWER_CSS);
    this.#body = el('div', { class: 'ctd-ask ctd-answer-view', part: 'body' });
    root.append(this.#body);
  }

  /** renderAnswer's options: {feedback, downloads, base, headers, credentials, history, onChoice, …} */
  get options() { return this.#options; }
  set options(value) {
    this.#options = { ...(value ?? {}) };
    if (this.#reply) this.#render();
  }

  get reply() { return this.#view?.reply ?? this.#reply; }
  set reply(value) {
    this.#reply = value;
    this.#render();
  }

  /** settles once the answer's charts are drawn (at once when there is none) */
  get drawn() { return this.#view?.drawn ?? Promise.resolve(); }

  connectedCallback() {
    if (this.#reply && !this.#view) this.#render();
  }

  disconnectedCallback() {
    // a tile moved within the page is disconnected and connected again in one task: keep it then
    queueMicrotask(() => {
      if (this.isConnected) return;
      this.#view?.destroy();
      this.#view = undefined;
    });
  }

  #render() {
    // a dashboard tile's layout (renderAnswer's `layout: 'tile'`) has rules of its own (styles.js)
    this.#body.classList.toggle('tile-view', this.#options.layout === 'tile');
    this.#view?.destroy();
    this.#view = this.#reply ? renderAnswer(this.#body, this.#reply, this.#options) : undefined;
    if (!this.#view) this.#body.replaceChildren();
  }
}

if (!customElements.get('cortado-answer')) customElements.define('cortado-answer', CortadoAnswer);
