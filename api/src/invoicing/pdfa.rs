//! What turns the invoice PDF into a Factur-X PDF/A-3B: the two fonts embedded
//! (Liberation Sans, metric-compatible with the Helvetica the layout measures with), an
//! output intent with a gray ICC profile (the pages draw only in DeviceGray), XMP
//! metadata declaring PDF/A-3B and the Factur-X extension schema, and the CII XML
//! attached as `factur-x.xml` with the relationship `Data`.

use std::io::Write as _;
use std::sync::OnceLock;

use flate2::Compression;
use flate2::write::ZlibEncoder;
use sha2::{Digest, Sha256};

const REGULAR: &[u8] = include_bytes!("../../assets/fonts/LiberationSans-Regular.ttf");
const BOLD: &[u8] = include_bytes!("../../assets/fonts/LiberationSans-Bold.ttf");
pub const ATTACHMENT: &str = "factur-x.xml";

/// A TrueType font as a PDF embeds it.
struct Font {
    name: &'static str,
    /// Advance widths of WinAnsi codes 32..=255 in 1/1000 em.
    widths: Vec<u32>,
    bbox: [i32; 4],
    ascent: i32,
    descent: i32,
    cap_height: i32,
    bold: bool,
    /// The font program, zlib-compressed, and its length before.
    compressed: Vec<u8>,
    length: usize,
}

fn u16_at(data: &[u8], at: usize) -> u16 {
    data.get(at..at + 2)
        .map_or(0, |b| u16::from_be_bytes([b[0], b[1]]))
}

fn i16_at(data: &[u8], at: usize) -> i16 {
    i16::from_be_bytes(u16_at(data, at).to_be_bytes())
}

fn u32_at(data: &[u8], at: usize) -> u32 {
    data.get(at..at + 4)
        .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// Where a table starts, from the font's table directory.
fn table(font: &[u8], tag: &[u8; 4]) -> usize {
    let count = usize::from(u16_at(font, 4));
    (0..count)
        .map(|i| 12 + 16 * i)
        .find(|&at| font.get(at..at + 4) == Some(tag))
        .map_or(0, |at| u32_at(font, at + 8) as usize)
}

/// The glyph of a character, from the Windows Unicode (3,1) format-4 cmap.
fn glyph(font: &[u8], cmap: usize, c: u16) -> u16 {
    let subtables = usize::from(u16_at(font, cmap + 2));
    let Some(sub) = (0..subtables)
        .map(|i| cmap + 4 + 8 * i)
        .find(|&at| u16_at(font, at) == 3 && u16_at(font, at + 2) == 1)
    else {
        return 0;
    };
    let sub = cmap + u32_at(font, sub + 4) as usize;
    let segments = usize::from(u16_at(font, sub + 6) / 2);
    let ends = sub + 14;
    let starts = ends + 2 * segments + 2;
    let deltas = starts + 2 * segments;
    let offsets = deltas + 2 * segments;
    for s in 0..segments {
        if u16_at(font, ends + 2 * s) < c {
            continue;
        }
        let start = u16_at(font, starts + 2 * s);
        if start > c {
            return 0;
        }
        let delta = u16_at(font, deltas + 2 * s);
        let range = usize::from(u16_at(font, offsets + 2 * s));
        if range == 0 {
            return c.wrapping_add(delta);
        }
        let at = offsets + 2 * s + range + 2 * usize::from(c - start);
        let g = u16_at(font, at);
        return if g == 0 { 0 } else { g.wrapping_add(delta) };
    }
    0
}

fn load(name: &'static str, data: &[u8], bold: bool) -> Font {
    let (head, hhea, hmtx, cmap, os2) = (
        table(data, b"head"),
        table(data, b"hhea"),
        table(data, b"hmtx"),
        table(data, b"cmap"),
        table(data, b"OS/2"),
    );
    let em = i32::from(u16_at(data, head + 18)).max(1);
    let scale = |v: i32| v * 1000 / em;
    let metrics = u16_at(data, hhea + 34).max(1);
    let advance = |g: u16| u32::from(u16_at(data, hmtx + 4 * usize::from(g.min(metrics - 1))));
    let widths = (32u16..=255)
        .map(|c| (advance(glyph(data, cmap, c)) * 1000 + em.unsigned_abs() / 2) / em.unsigned_abs())
        .collect();
    let bbox = [36, 38, 40, 42].map(|at| scale(i32::from(i16_at(data, head + at))));
    let mut encoder = ZlibEncoder::new(Vec::new(), Compression::default());
    // Writing into memory cannot fail.
    let _ = encoder.write_all(data);
    Font {
        name,
        widths,
        bbox,
        ascent: scale(i32::from(i16_at(data, hhea + 4))),
        descent: scale(i32::from(i16_at(data, hhea + 6))),
        cap_height: scale(i32::from(i16_at(data, os2 + 88))),
        bold,
        compressed: encoder.finish().unwrap_or_default(),
        length: data.len(),
    }
}

fn fonts() -> &'static [Font; 2] {
    static FONTS: OnceLock<[Font; 2]> = OnceLock::new();
    FONTS.get_or_init(|| {
        [
            load("LiberationSans", REGULAR, false),
            load("LiberationSans-Bold", BOLD, true),
        ]
    })
}

/// A stream object: its dictionary entries and its bytes.
fn stream(entries: &str, data: &[u8]) -> Vec<u8> {
    let mut out = format!("<< {entries} /Length {} >>\nstream\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\nendstream");
    out
}

/// A length as ICC writes it (big-endian u32; the profile is a few hundred bytes).
fn be32(n: usize) -> [u8; 4] {
    u32::try_from(n).unwrap_or(u32::MAX).to_be_bytes()
}

/// A minimal ICC v2 display profile for gray with gamma 2.2 and a D50 white.
fn gray_profile() -> Vec<u8> {
    fn padded(mut tag: Vec<u8>) -> Vec<u8> {
        while !tag.len().is_multiple_of(4) {
            tag.push(0);
        }
        tag
    }
    let d50: Vec<u8> = [0x0000_F6D6u32, 0x0001_0000, 0x0000_D32D]
        .iter()
        .flat_map(|v| v.to_be_bytes())
        .collect();
    let name = b"neocloud gray gamma 2.2\0";
    let mut desc = b"desc\0\0\0\0".to_vec();
    desc.extend_from_slice(&be32(name.len()));
    desc.extend_from_slice(name);
    desc.extend_from_slice(&[0; 8 + 2 + 1 + 67]);
    let mut white = b"XYZ \0\0\0\0".to_vec();
    white.extend_from_slice(&d50);
    let mut curve = b"curv\0\0\0\0".to_vec();
    curve.extend_from_slice(&1u32.to_be_bytes());
    curve.extend_from_slice(&0x0233u16.to_be_bytes());
    let mut copyright = b"text\0\0\0\0".to_vec();
    copyright.extend_from_slice(b"No copyright, use freely\0");
    let tags = [
        (b"desc", padded(desc)),
        (b"wtpt", padded(white)),
        (b"kTRC", padded(curve)),
        (b"cprt", padded(copyright)),
    ];
    let mut at = 128 + 4 + 12 * tags.len();
    let mut directory = be32(tags.len()).to_vec();
    let mut data = Vec::new();
    for (signature, body) in &tags {
        directory.extend_from_slice(*signature);
        directory.extend_from_slice(&be32(at));
        directory.extend_from_slice(&be32(body.len()));
        at += body.len();
        data.extend_from_slice(body);
    }
    let mut header = Vec::with_capacity(128);
    header.extend_from_slice(&be32(at));
    header.extend_from_slice(&[0; 4]);
    header.extend_from_slice(&0x0210_0000u32.to_be_bytes());
    header.extend_from_slice(b"mntrGRAYXYZ ");
    for part in [2026u16, 1, 1, 0, 0, 0] {
        header.extend_from_slice(&part.to_be_bytes());
    }
    header.extend_from_slice(b"acsp");
    header.extend_from_slice(&[0; 68 - 40]);
    header.extend_from_slice(&d50);
    header.resize(128, 0);
    [header, directory, data].concat()
}

fn xml_text(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

const FX: &str = "urn:factur-x:pdfa:CrossIndustryDocument:invoice:1p0#";

fn fx_property(name: &str, description: &str) -> String {
    format!(
        "<rdf:li rdf:parseType=\"Resource\"><pdfaProperty:name>{name}</pdfaProperty:name>\
         <pdfaProperty:valueType>Text</pdfaProperty:valueType>\
         <pdfaProperty:category>external</pdfaProperty:category>\
         <pdfaProperty:description>{description}</pdfaProperty:description></rdf:li>"
    )
}

/// The XMP packet: PDF/A-3B, the same title, author and producer as the Info
/// dictionary, and the Factur-X properties with their extension schema.
fn xmp(title: &str, author: &str) -> String {
    let properties = [
        fx_property("DocumentFileName", "The name of the embedded XML document"),
        fx_property("DocumentType", "The type of the hybrid document: INVOICE"),
        fx_property("Version", "The version of the Factur-X XML schema"),
        fx_property(
            "ConformanceLevel",
            "The conformance level of the embedded XML",
        ),
    ]
    .concat();
    let (title, author) = (xml_text(title), xml_text(author));
    format!(
        "<?xpacket begin=\"\u{feff}\" id=\"W5M0MpCehiHzreSzNTczkc9d\"?>\n\
<x:xmpmeta xmlns:x=\"adobe:ns:meta/\"><rdf:RDF xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\">\n\
<rdf:Description rdf:about=\"\" xmlns:pdfaid=\"http://www.aiim.org/pdfa/ns/id/\">\
<pdfaid:part>3</pdfaid:part><pdfaid:conformance>B</pdfaid:conformance></rdf:Description>\n\
<rdf:Description rdf:about=\"\" xmlns:dc=\"http://purl.org/dc/elements/1.1/\">\
<dc:title><rdf:Alt><rdf:li xml:lang=\"x-default\">{title}</rdf:li></rdf:Alt></dc:title>\
<dc:creator><rdf:Seq><rdf:li>{author}</rdf:li></rdf:Seq></dc:creator></rdf:Description>\n\
<rdf:Description rdf:about=\"\" xmlns:pdf=\"http://ns.adobe.com/pdf/1.3/\">\
<pdf:Producer>neocloud</pdf:Producer></rdf:Description>\n\
<rdf:Description rdf:about=\"\" xmlns:fx=\"{FX}\">\
<fx:DocumentType>INVOICE</fx:DocumentType><fx:DocumentFileName>{ATTACHMENT}</fx:DocumentFileName>\
<fx:Version>1.0</fx:Version><fx:ConformanceLevel>EN 16931</fx:ConformanceLevel></rdf:Description>\n\
<rdf:Description rdf:about=\"\" xmlns:pdfaExtension=\"http://www.aiim.org/pdfa/ns/extension/\" \
xmlns:pdfaSchema=\"http://www.aiim.org/pdfa/ns/schema#\" xmlns:pdfaProperty=\"http://www.aiim.org/pdfa/ns/property#\">\
<pdfaExtension:schemas><rdf:Bag><rdf:li rdf:parseType=\"Resource\">\
<pdfaSchema:schema>Factur-X PDFA Extension Schema</pdfaSchema:schema>\
<pdfaSchema:namespaceURI>{FX}</pdfaSchema:namespaceURI><pdfaSchema:prefix>fx</pdfaSchema:prefix>\
<pdfaSchema:property><rdf:Seq>{properties}</rdf:Seq></pdfaSchema:property>\
</rdf:li></rdf:Bag></pdfaExtension:schemas></rdf:Description>\n\
</rdf:RDF></x:xmpmeta>\n<?xpacket end=\"w\"?>"
    )
}

/// What an archival PDF adds to the plain one.
pub struct Archive {
    /// Entries for the catalog.
    pub catalog: String,
    /// The font dictionaries `/F1` (regular) and `/F2` (bold).
    pub fonts: [String; 2],
    /// Further objects, numbered from the `first` given to [`archive`].
    pub objects: Vec<Vec<u8>>,
    /// The trailer's file identifier.
    pub id: String,
}

/// Appends `font`'s descriptor and program to `objects` (numbered from `first`); returns
/// its font dictionary.
fn embed(font: &Font, first: usize, objects: &mut Vec<Vec<u8>>) -> String {
    let descriptor = first + objects.len();
    let [x0, y0, x1, y1] = font.bbox;
    objects.push(
        format!(
            "<< /Type /FontDescriptor /FontName /{} /Flags 32 /FontBBox [{x0} {y0} {x1} {y1}] \
             /ItalicAngle 0 /Ascent {} /Descent {} /CapHeight {} /StemV {} /FontFile2 {} 0 R >>",
            font.name,
            font.ascent,
            font.descent,
            font.cap_height,
            if font.bold { 140 } else { 80 },
            descriptor + 1
        )
        .into_bytes(),
    );
    let entries = format!("/Filter /FlateDecode /Length1 {}", font.length);
    objects.push(stream(&entries, &font.compressed));
    let widths: Vec<String> = font.widths.iter().map(u32::to_string).collect();
    format!(
        "<< /Type /Font /Subtype /TrueType /BaseFont /{} /FirstChar 32 /LastChar 255 \
         /Widths [{}] /Encoding /WinAnsiEncoding /FontDescriptor {descriptor} 0 R >>",
        font.name,
        widths.join(" ")
    )
}

/// The objects of a Factur-X PDF numbered from `first`, for a document titled `title`
/// by `author` (both as the Info dictionary has them) carrying `xml`.
pub fn archive(first: usize, title: &str, author: &str, xml: &[u8]) -> Archive {
    let mut objects = Vec::new();
    let fonts = self::fonts()
        .each_ref()
        .map(|font| embed(font, first, &mut objects));
    let metadata = first + objects.len();
    objects.push(stream(
        "/Type /Metadata /Subtype /XML",
        xmp(title, author).as_bytes(),
    ));
    let intent = first + objects.len();
    objects.push(
        format!(
            "<< /Type /OutputIntent /S /GTS_PDFA1 /OutputConditionIdentifier (Gray gamma 2.2) \
             /Info (Gray gamma 2.2) /DestOutputProfile {} 0 R >>",
            intent + 1
        )
        .into_bytes(),
    );
    objects.push(stream("/N 1", &gray_profile()));
    let file = first + objects.len();
    let params = format!(
        "/Type /EmbeddedFile /Subtype /text#2Fxml /Params << /Size {} >>",
        xml.len()
    );
    objects.push(stream(&params, xml));
    let spec = first + objects.len();
    objects.push(
        format!(
            "<< /Type /Filespec /F ({ATTACHMENT}) /UF ({ATTACHMENT}) /EF << /F {file} 0 R /UF {file} 0 R >> \
             /AFRelationship /Data /Desc (Factur-X invoice, EN 16931) >>"
        )
        .into_bytes(),
    );
    let catalog = format!(
        "/Metadata {metadata} 0 R /OutputIntents [{intent} 0 R] /AF [{spec} 0 R] \
         /Names << /EmbeddedFiles << /Names [({ATTACHMENT}) {spec} 0 R] >> >>"
    );
    let digest = Sha256::new()
        .chain_update(title.as_bytes())
        .chain_update(xml)
        .finalize();
    let id = hex::encode(&digest[..16]);
    Archive {
        catalog,
        fonts,
        objects,
        id: format!("[<{id}> <{id}>]"),
    }
}

/// The embedded fonts' widths of WinAnsi codes 32..=255: regular, then bold.
#[cfg(test)]
pub fn embedded_widths() -> [&'static [u32]; 2] {
    let [regular, bold] = fonts();
    [&regular.widths, &bold.widths]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fonts_are_read_from_their_tables() {
        let [regular, bold] = fonts();
        let at = |c: u8| usize::from(c - 32);
        // Latin-1: "é" is as wide as "e"; bold is wider than regular.
        assert_eq!(regular.widths[0xE9 - 32], regular.widths[at(b'e')]);
        assert!(bold.widths[at(b'e')] > 0 && bold.bold && !regular.bold);
        assert!(regular.ascent > 0 && regular.descent < 0 && regular.cap_height > 0);
        assert!(regular.compressed.len() < regular.length);
    }

    #[test]
    fn the_gray_profile_is_a_well_formed_icc_header_and_tag_table() {
        let icc = gray_profile();
        assert_eq!(u32_at(&icc, 0) as usize, icc.len());
        assert_eq!(&icc[12..24], b"mntrGRAYXYZ ");
        assert_eq!(&icc[36..40], b"acsp");
        assert_eq!(u32_at(&icc, 128), 4);
        for i in 0..4 {
            let (offset, size) = (
                u32_at(&icc, 132 + 12 * i + 4),
                u32_at(&icc, 132 + 12 * i + 8),
            );
            assert_eq!(offset % 4, 0);
            assert!((offset + size) as usize <= icc.len());
        }
    }
}
