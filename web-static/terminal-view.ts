// The terminal itself (xterm.js and its style sheet), a chunk of its own that the Terminal page imports
// only when an admin attaches a terminal, so the other pages do not carry it. It speaks the
// /api/terminal relay's JSON messages (functions/runners/terminal.ts): output/exit/error in, input/resize out.
import { FitAddon } from '@xterm/addon-fit';
import { Terminal } from '@xterm/xterm';
import xtermCss from '@xterm/xterm/css/xterm.css' with { type: 'text' };

/** xterm's style sheet, added to the document once, with the chunk that needs it. */
function addStyles(): void {
  if (document.getElementById('xterm-css')) return;
  const style = document.createElement('style');
  style.id = 'xterm-css';
  style.textContent = xtermCss;
  document.head.append(style);
}

export interface Mounted {
  /** Detach: close the relay (the tmux session lives on) and dispose the terminal. */
  detach: () => void;
}

export function mountTerminal(el: HTMLElement, url: string, onEnd: (why: string) => void): Mounted {
  addStyles();
  const term = new Terminal({ cursorBlink: true, fontSize: 13, scrollback: 5000, convertEol: false });
  const fit = new FitAddon();
  term.loadAddon(fit);
  term.open(el);
  fit.fit();
  const ws = new WebSocket(`${url}&cols=${term.cols}&rows=${term.rows}`);
  let ended = false;
  const end = (why: string) => {
    if (ended) return;
    ended = true;
    onEnd(why);
  };
  ws.onmessage = (ev) => {
    const msg = JSON.parse(String(ev.data)) as { type: string; data?: string; reason?: string; message?: string };
    if (msg.type === 'output' && msg.data) term.write(msg.data);
    else if (msg.type === 'exit') end(msg.reason ?? 'the terminal closed');
    else if (msg.type === 'error') end(msg.message ?? 'the terminal could not be opened');
  };
  ws.onclose = () => end('the connection closed');
  // Typed before the socket is open (right after Attach): kept and sent, in order, once it is.
  const pending: string[] = [];
  const send = (msg: unknown) => {
    if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(msg));
    else if (ws.readyState === WebSocket.CONNECTING && pending.length < 1000) pending.push(JSON.stringify(msg));
  };
  ws.onopen = () => {
    for (const m of pending.splice(0)) ws.send(m);
  };
  const typed = term.onData((data) => send({ type: 'input', data }));
  const resized = term.onResize(({ cols, rows }) => send({ type: 'resize', cols, rows }));
  const onWindow = () => fit.fit();
  addEventListener('resize', onWindow);
  term.focus();
  return {
    detach: () => {
      removeEventListener('resize', onWindow);
      typed.dispose();
      resized.dispose();
      ended = true;
      ws.close();
      term.dispose();
    },
  };
}
