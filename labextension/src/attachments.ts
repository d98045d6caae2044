/**
 * Images attached to a message in the composer, apart from React and JupyterLab (unit-tested):
 * which files of a paste or a drop are images (`imageFiles`), an image read as an attachment
 * (`readImage`, `fromBase64`), the composer's list within the server's bounds (`attach`: at
 * most `MAX_IMAGES`, each at most `MAX_IMAGE_BYTES`; the server checks the same and answers
 * `ATTACHMENT_REFUSED`, or `VALIDATION_ERROR` for one too large), and the message's `content` with them
 * (`messageContent`: text and image parts; the server stores each image as an artifact).
 */

import type { components } from './openapi';

export type MessageContent = components['schemas']['MessageCreate']['content'];

export const MAX_IMAGES = 4;
export const MAX_IMAGE_BYTES = 5_000_000;
/** The image types every wire API reads, by file name extension too (a file browser path). */
export const IMAGE_TYPES: Record<string, string> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp'
};

/** An image in the composer: its bytes in base64 and a name for its chip. */
export interface Attachment {
  key: string;
  name: string;
  mime: string;
  data: string;
  /** Its size in bytes. */
  size: number;
}

let made = 0;

/** The image type of a file name (`plot.PNG` -> image/png), or null. */
export function imageTypeOf(name: string): string | null {
  const ext = /\.([^./]+)$/.exec(name)?.[1]?.toLowerCase() ?? '';
  return IMAGE_TYPES[ext] ?? null;
}

/** The image files of a paste or a drop (a clipboard's screenshot is a `File` too). */
export function imageFiles(data: DataTransfer | null): File[] {
  if (!data) {
    return [];
  }
  const types = new Set(Object.values(IMAGE_TYPES));
  const files = Array.from(data.files ?? []);
  if (!files.length) {
    for (const item of Array.from(data.items ?? [])) {
      const file = item.kind === 'file' ? item.getAsFile() : null;
      if (file) {
        files.push(file);
      }
    }
  }
  return files.filter(f => types.has(f.type));
}

/** An attachment of base64 bytes (a file read from the server's contents). */
export function fromBase64(name: string, mime: string, data: string): Attachment {
  const clean = data.replace(/\s/g, '');
  const padding = clean.endsWith('==') ? 2 : clean.endsWith('=') ? 1 : 0;
  return { key: `image-${++made}`, name, mime, data: clean, size: (clean.length / 4) * 3 - padding };
}

/** A pasted or dropped file as an attachment. */
export async function readImage(file: File): Promise<Attachment> {
  const bytes = new Uint8Array(await file.arrayBuffer());
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return fromBase64(file.name || 'pasted image', file.type, btoa(binary));
}

/** The data URL a chip shows the image with. */
export function dataUrl(attachment: Attachment): string {
  return `data:${attachment.mime};base64,${attachment.data}`;
}

/** An image left out of the list, and why. */
export type Refusal = { name: string; reason: 'too-large' | 'too-many' };

/** `current` with `added` attached, within the bounds; and those refused, with why. */
export function attach(current: Attachment[], added: Attachment[]): { attached: Attachment[]; refused: Refusal[] } {
  const attached = [...current];
  const refused: Refusal[] = [];
  for (const image of added) {
    if (image.size > MAX_IMAGE_BYTES) {
      refused.push({ name: image.name, reason: 'too-large' });
    } else if (attached.length >= MAX_IMAGES) {
      refused.push({ name: image.name, reason: 'too-many' });
    } else {
      attached.push(image);
    }
  }
  return { attached, refused };
}

/** A message's `content`: its text alone, or its text and its images as parts. */
export function messageContent(text: string, images: Attachment[]): MessageContent {
  if (!images.length) {
    return text;
  }
  return [
    { type: 'text', text },
    ...images.map(image => ({ type: 'image' as const, mime: image.mime, data_base64: image.data }))
  ];
}
