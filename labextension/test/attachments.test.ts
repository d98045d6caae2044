import { describe, expect, it } from 'vitest';

import { AgiClient, type Transport } from '../src/api';
import {
  attach,
  type Attachment,
  dataUrl,
  fromBase64,
  imageFiles,
  imageTypeOf,
  MAX_IMAGE_BYTES,
  MAX_IMAGES,
  messageContent,
  readImage
} from '../src/attachments';
import { messageItem, visibleBlocks } from '../src/items';
import { PanelModel } from '../src/model';
import { message } from './fixtures';

// The 8 bytes every PNG starts with, and a few more: enough to stand for one here.
const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]);
const PNG_BASE64 = Buffer.from(PNG).toString('base64');

/** What a paste or a drop carries (a `DataTransfer`, structurally: node has none). */
function transfer(files: File[], asItems = false): DataTransfer {
  const items = files.map(f => ({ kind: 'file', type: f.type, getAsFile: () => f }));
  return { files: asItems ? [] : files, items } as unknown as DataTransfer;
}

function image(name: string, size: number): Attachment {
  return { key: name, name, mime: 'image/png', data: 'AAAA', size };
}

describe('attached images', () => {
  it('takes the image files of a paste or a drop, from its files or its items', () => {
    const shot = new File([PNG], 'image.png', { type: 'image/png' });
    const photo = new File([PNG], 'photo.webp', { type: 'image/webp' });
    const text = new File(['hello'], 'notes.txt', { type: 'text/plain' });
    expect(imageFiles(transfer([shot, text, photo]))).toEqual([shot, photo]);
    expect(imageFiles(transfer([shot], true))).toEqual([shot]); // a clipboard's screenshot
    expect(imageFiles(null)).toEqual([]);
  });

  it('knows an image by its name, for files dragged from the file browser', () => {
    expect(imageTypeOf('plots/dot.PNG')).toBe('image/png');
    expect(imageTypeOf('a.jpg')).toBe('image/jpeg');
    expect(imageTypeOf('data.csv')).toBeNull();
    expect(imageTypeOf('analysis.ipynb')).toBeNull();
  });

  it('reads a file into base64 with its size, and shows it as a data URL', async () => {
    const read = await readImage(new File([PNG], 'dot.png', { type: 'image/png' }));
    expect(read).toMatchObject({ name: 'dot.png', mime: 'image/png', data: PNG_BASE64, size: PNG.length });
    expect(dataUrl(read)).toBe(`data:image/png;base64,${PNG_BASE64}`);
    expect(fromBase64('dot.png', 'image/png', `${PNG_BASE64.slice(0, 8)}\n${PNG_BASE64.slice(8)}`).size).toBe(PNG.length);
  });

  it('keeps the list within the bounds the server checks, saying what it left out', () => {
    const four = Array.from({ length: MAX_IMAGES }, (_, i) => image(`i${i}.png`, 10));
    const big = image('huge.png', MAX_IMAGE_BYTES + 1);
    const { attached, refused } = attach(four.slice(0, 3), [big, four[3]!, image('fifth.png', 10)]);
    expect(attached.map(a => a.name)).toEqual(['i0.png', 'i1.png', 'i2.png', 'i3.png']);
    expect(refused).toEqual([
      { name: 'huge.png', reason: 'too-large' },
      { name: 'fifth.png', reason: 'too-many' }
    ]);
  });

  it('sends text alone, or text and images as parts', () => {
    expect(messageContent('hi', [])).toBe('hi');
    expect(messageContent('what is it?', [image('a.png', 3)])).toEqual([
      { type: 'text', text: 'what is it?' },
      { type: 'image', mime: 'image/png', data_base64: 'AAAA' }
    ]);
  });

  it('shows a stored image by its artifact, in the simple view too', () => {
    const stored = message({
      id: 'm1',
      role: 'user',
      parts: [
        { type: 'text', text: 'what is it?' },
        { type: 'image', mime: 'image/png', data_base64: null, url: null, artifact_id: 'art_1' }
      ]
    });
    const item = messageItem(stored);
    expect(item.blocks).toContainEqual({ kind: 'image', mime: 'image/png', src: '', artifactId: 'art_1' });
    expect(visibleBlocks(item, 'simple')?.map(b => b.kind)).toEqual(['text', 'image']);
  });

  it('posts the attached images with the message', async () => {
    const posted: unknown[] = [];
    const transport: Transport = async (path, init) => {
      if (path.includes('/messages') && init.method === 'POST') {
        posted.push(JSON.parse(String(init.body)));
        return new Response('', { headers: { 'Content-Type': 'application/x-ndjson' } });
      }
      const empty = { sessions: [{ id: 'ses_1' }], agents: [], providers: [], sdks: [], runs: [], messages: [] };
      return new Response(JSON.stringify({ ...empty, next_cursor: null }), { headers: { 'Content-Type': 'application/json' } });
    };
    const model = new PanelModel(new AgiClient(transport), null);
    model.pickProject('');
    await model.selectSession('ses_1');
    await model.send('what is it?', {}, [], [image('a.png', 3)]);
    expect(posted).toEqual([
      {
        content: [
          { type: 'text', text: 'what is it?' },
          { type: 'image', mime: 'image/png', data_base64: 'AAAA' }
        ]
      }
    ]);
    model.dispose();
  });
});
