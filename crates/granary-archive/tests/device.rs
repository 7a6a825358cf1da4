//! Device sections (format v3): driver binaries per pipeline and device, pipeline caches.

use granary_archive::{
    encode, merge, salvage, write_entries, Archive, ArchiveError, ArchiveMeta, BinarySet, Blob, DeviceBinaries,
    DeviceBinary, DeviceCache, DeviceIdentity, PipelineKey, WriteEntry, BINARY_SET_LIBRARY,
};
use granary_archive::{replay_journal, Journal};
use std::sync::Arc;

fn nvidia() -> Arc<DeviceIdentity> {
    Arc::new(DeviceIdentity {
        vendor_id: 0x10de,
        device_id: 0x2335,
        driver_id: 4,
        driver_version: 0x9100_4000,
        api_version: 0x0040_3000,
        features: Default::default(),
        pipeline_cache_uuid: [0xab; 16],
        binary_global_key: vec![9; 20],
        device_name: "NVIDIA H200".into(),
        driver_name: "NVIDIA".into(),
        driver_info: "580.95".into(),
    })
}

fn lavapipe() -> Arc<DeviceIdentity> {
    Arc::new(DeviceIdentity {
        vendor_id: 0x10005,
        device_id: 0,
        driver_id: 13,
        driver_version: 0x0060_1000,
        api_version: 0x0040_3000,
        features: Default::default(),
        pipeline_cache_uuid: [0x11; 16],
        binary_global_key: Vec::new(),
        device_name: "llvmpipe (LLVM 19.1.7, 256 bits)".into(),
        driver_name: "llvmpipe".into(),
        driver_info: "Mesa 25.0.7".into(),
    })
}

fn entry(k: u128) -> WriteEntry {
    granary_archive::__compute_entry(k, k * 7, vec![k as u8; 40], format!("p{k}"))
}

fn bin(key: &[u8], data: Vec<u8>) -> DeviceBinary {
    DeviceBinary { key: key.to_vec(), data: Blob::new(data) }
}

/// The ~125 KB dictionary every pipeline's set carries on NVIDIA (same key, per-process bytes).
fn dictionary(process: u8) -> DeviceBinary {
    bin(&[0xd1; 32], (0..125_000u32).map(|i| (i as u8) ^ process).collect())
}

fn nvidia_set(k: u128, process: u8) -> Arc<BinarySet> {
    Arc::new(BinarySet {
        flags: if k.is_multiple_of(2) { BINARY_SET_LIBRARY } else { 0 },
        pipeline_key: if k.is_multiple_of(3) { Vec::new() } else { vec![k as u8; 16] },
        binaries: vec![
            bin(&[k as u8, 1], vec![k as u8 ^ process; 1000 + k as usize]),
            dictionary(process),
            bin(&[k as u8, 2, 3], vec![0x5a ^ process; 3000]),
        ],
    })
}

fn with_binaries(k: u128, process: u8) -> WriteEntry {
    let mut w = entry(k);
    w.binaries = vec![
        DeviceBinaries { device: nvidia(), set: nvidia_set(k, process) },
        DeviceBinaries {
            device: lavapipe(),
            set: Arc::new(BinarySet { flags: 0, pipeline_key: Vec::new(), binaries: Vec::new() }),
        },
    ];
    w
}

fn caches() -> Vec<DeviceCache> {
    vec![
        DeviceCache { device: lavapipe(), data: Blob::new(b"lavapipe cache one".repeat(10)) },
        DeviceCache { device: lavapipe(), data: Blob::new(b"lavapipe cache two".repeat(20)) },
    ]
}

fn meta() -> ArchiveMeta {
    let mut m = ArchiveMeta::new("device test options");
    m.device_caches = caches();
    m
}

fn sample() -> Vec<WriteEntry> {
    vec![with_binaries(1, 0), with_binaries(2, 0), with_binaries(3, 0), entry(4)]
}

/// (key, bytes) of each binary.
type Binaries = Vec<(Vec<u8>, Vec<u8>)>;

fn set_bytes(a: &Archive, d: &DeviceIdentity, key: u128) -> Option<(u32, Binaries)> {
    let dev = a.device_for(d).unwrap()?;
    let p = a.get(PipelineKey(key)).unwrap().unwrap();
    let set = dev.binaries(&p).unwrap()?;
    Some((
        set.flags(),
        set.iter().map(|b| b.map(|b| (b.key.to_vec(), b.data.to_vec()))).collect::<Result<_, _>>().unwrap(),
    ))
}

/// What the run-time loader keeps from the driver (NVIDIA's dictionary: drawing with a pipeline
/// created from a set that carries it crashes NVIDIA 580) is found by content: a binary at least
/// the threshold long that two sets of the section share. Small shared binaries, and a large
/// binary only one set has, are not it.
#[test]
fn shared_binaries_are_the_large_blobs_two_sets_of_a_section_reference() {
    let a = Archive::from_bytes(encode(&sample(), &meta())).unwrap();
    let nv = a.device_for(&nvidia()).unwrap().expect("NVIDIA section");
    let carried = |shared: &granary_archive::SharedBinaries, k: u128| {
        let p = a.get(PipelineKey(k)).unwrap().unwrap();
        shared.carried_by(&nv.binaries(&p).unwrap().unwrap()).unwrap()
    };
    // The 125 KB dictionary, shared by all three sets; the 3 KB binary they also share is small.
    let dictionary = nv.shared_binaries(64 << 10).unwrap();
    assert_eq!(dictionary.len(), 1);
    assert!((1..=3).all(|k| carried(&dictionary, k)));
    // With no threshold, the small shared binary counts too; the per-pipeline ones never do.
    assert_eq!(nv.shared_binaries(0).unwrap().len(), 2);
    // Nothing is that large: nothing shared.
    assert!(nv.shared_binaries(1 << 20).unwrap().is_empty());
    // A lavapipe section of empty sets shares nothing.
    assert!(a.device_for(&lavapipe()).unwrap().unwrap().shared_binaries(0).unwrap().is_empty());

    // A large binary in one set only (each pipeline's dictionary from another process: other
    // bytes, other blobs) is not shared.
    let mut lone = vec![with_binaries(1, 0)];
    lone.push(with_binaries(2, 1));
    let b = Archive::from_bytes(encode(&lone, &meta())).unwrap();
    let nv = b.device_for(&nvidia()).unwrap().unwrap();
    let shared = nv.shared_binaries(64 << 10).unwrap();
    assert!(shared.is_empty(), "two different dictionaries, one set each");
    for k in 1..=2u128 {
        let p = b.get(PipelineKey(k)).unwrap().unwrap();
        assert!(!shared.carried_by(&nv.binaries(&p).unwrap().unwrap()).unwrap());
    }
}

#[test]
fn two_devices_round_trip_with_a_shared_dictionary_stored_once_and_order_kept() {
    let entries = sample();
    let a = Archive::from_bytes(encode(&entries, &meta())).unwrap();
    let rep = a.verify().unwrap();
    assert_eq!((rep.devices, rep.device_pipelines), (2, 6));
    // Blobs: 4 SPIR-V outputs; per NVIDIA pipeline 1 own binary, plus the dictionary and the
    // third binary that all three share (3 + 2); 2 identities; 2 caches.
    assert_eq!(a.blob_count(), 4 + 5 + 2 + 2);
    assert_eq!(a.device_count(), 2);

    let nv = a.device_for(&nvidia()).unwrap().expect("NVIDIA section");
    assert_eq!(nv.identity(), &*nvidia());
    assert!(nv.has_pipeline_binaries());
    assert_eq!(nv.pipeline_count(), 3);
    assert!(nv.caches().unwrap().is_empty());
    for k in 1..=3u128 {
        let want = nvidia_set(k, 0);
        let (flags, got) = set_bytes(&a, &nvidia(), k).unwrap();
        assert_eq!(flags, want.flags);
        let want: Vec<_> = want.binaries.iter().map(|b| (b.key.clone(), b.data.bytes().to_vec())).collect();
        assert_eq!(got, want, "pipeline {k}: binaries and their order as given");
    }
    assert_eq!(set_bytes(&a, &nvidia(), 4), None, "pipeline 4 has no binaries");

    let lp = a.device_for(&lavapipe()).unwrap().expect("lavapipe section");
    assert!(!lp.has_pipeline_binaries());
    assert_eq!(lp.pipeline_count(), 3);
    let p1 = a.get(PipelineKey(1)).unwrap().unwrap();
    let set = lp.binaries(&p1).unwrap().expect("compiled on lavapipe");
    assert!(set.is_empty());
    assert_eq!(set.len(), 0);
    let mut got: Vec<Vec<u8>> = lp.caches().unwrap().into_iter().map(<[u8]>::to_vec).collect();
    got.sort();
    let mut want: Vec<Vec<u8>> = caches().iter().map(|c| c.data.bytes().to_vec()).collect();
    want.sort();
    assert_eq!(got, want);

    // Read back as owned data: the same binaries, the same caches.
    let back = a.entries().unwrap();
    for (w, orig) in back.iter().zip(&entries) {
        let mut want = orig.binaries.clone();
        want.sort_by_key(|b| b.device.id());
        assert_eq!(w.binaries, want, "pipeline {}", w.entry.key);
        assert_eq!(a.get(w.entry.key).unwrap().unwrap().device_binaries().unwrap(), want);
    }
    let m = a.meta().unwrap();
    assert_eq!(m.device_caches.len(), 2);
    assert_eq!(encode(&back, &m), encode(&entries, &meta()), "rewriting an archive reproduces it byte for byte");
}

#[test]
fn device_for_is_an_exact_match() {
    let a = Archive::from_bytes(encode(&sample(), &meta())).unwrap();
    let mut other = (*nvidia()).clone();
    other.driver_version += 1;
    assert!(a.device_for(&other).unwrap().is_none());
    let mut other = (*nvidia()).clone();
    other.binary_global_key[0] ^= 1;
    assert!(a.device_for(&other).unwrap().is_none());
    assert!(a.device_for(&nvidia()).unwrap().is_some());
    let mism = nvidia().mismatch(&other).unwrap();
    assert!(mism.starts_with("binary_global_key"), "{mism}");
    // An archive without devices.
    let plain = Archive::from_bytes(encode(&[entry(1)], &ArchiveMeta::new("x"))).unwrap();
    assert!(plain.devices().unwrap().is_empty());
    assert!(plain.device_for(&nvidia()).unwrap().is_none());
    assert_eq!(plain.verify().unwrap().devices, 0);
}

/// An application asks with its device's identity: the right section, or a refusal that says
/// what the archive was built for and what differs, before any binary is read.
#[test]
fn binaries_for_names_what_the_archive_was_built_for() {
    let a = Archive::from_bytes(encode(&sample(), &meta())).unwrap();
    let found = a.binaries_for(&nvidia()).unwrap().expect("built for this device");
    assert_eq!(found.identity(), &*nvidia());
    let mut newer = (*nvidia()).clone();
    newer.driver_version += 1;
    newer.driver_info = "580.200.01".into();
    let refusal = a.binaries_for(&newer).unwrap().expect_err("another driver");
    let text = refusal.to_string();
    assert!(
        text.starts_with(&format!("built for {}, this device is {}", nvidia().describe(), newer.describe())),
        "{text}"
    );
    assert!(text.contains("driver_version") && text.contains("driver_info"), "{text}");
    assert_eq!(refusal.built_for.len(), a.devices().unwrap().len());
    let plain = Archive::from_bytes(encode(&[entry(1)], &ArchiveMeta::new("x"))).unwrap();
    let none = plain.binaries_for(&nvidia()).unwrap().expect_err("no devices");
    assert!(none.to_string().starts_with("the archive holds no driver binaries"), "{none}");
}

#[test]
fn bytes_are_a_function_of_the_set_and_the_smaller_set_hash_wins() {
    let a = with_binaries(1, 0);
    let b = with_binaries(1, 7); // another process: other dictionary bytes, other binaries
    let ha = a.binaries[0].set.hash();
    let hb = b.binaries[0].set.hash();
    assert_ne!(ha, hb);
    let winner = if ha < hb { 0 } else { 7 };
    let one = encode(&[a.clone(), b.clone(), entry(2), with_binaries(3, 0)], &meta());
    let mut m2 = meta();
    m2.device_caches.reverse();
    m2.device_caches.push(m2.device_caches[0].clone());
    let two = encode(&[with_binaries(3, 0), entry(2), b.clone(), a.clone(), b], &m2);
    assert_eq!(one, two);
    let arch = Archive::from_bytes(one).unwrap();
    arch.verify().unwrap();
    let want: Vec<_> =
        nvidia_set(1, winner).binaries.iter().map(|b| (b.key.clone(), b.data.bytes().to_vec())).collect();
    assert_eq!(set_bytes(&arch, &nvidia(), 1).unwrap().1, want, "the whole set with the smaller hash, never mixed");
}

#[test]
fn merge_is_order_independent_and_unions_devices() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, entries: &[WriteEntry], meta: &ArchiveMeta| {
        let p = dir.path().join(name);
        write_entries(&p, entries, meta).unwrap();
        Archive::read(&p).unwrap()
    };
    // Two harvests of the same pipelines on NVIDIA in two processes (competing sets), and one
    // on lavapipe only (cache data).
    let mut lp_only = vec![entry(1), entry(5)];
    for w in &mut lp_only {
        w.binaries = vec![DeviceBinaries {
            device: lavapipe(),
            set: Arc::new(BinarySet { flags: 0, pipeline_key: Vec::new(), binaries: vec![] }),
        }];
    }
    let nv = |process| {
        let mut w = vec![with_binaries(1, process), with_binaries(2, process)];
        for w in &mut w {
            w.binaries.retain(|b| b.device.binary_global_key.len() == 20);
        }
        w
    };
    let a = write("a.granary", &nv(0), &ArchiveMeta::new("device test options"));
    let b = write("b.granary", &nv(3), &ArchiveMeta::new("device test options"));
    let c = write("c.granary", &lp_only, &meta());
    let bytes = |inputs: &[Archive]| {
        let (e, m) = merge(inputs).unwrap();
        encode(&e, &m)
    };
    let abc = bytes(&[a, b, c]);
    let a = Archive::read(&dir.path().join("a.granary")).unwrap();
    let b = Archive::read(&dir.path().join("b.granary")).unwrap();
    let c = Archive::read(&dir.path().join("c.granary")).unwrap();
    assert_eq!(abc, bytes(&[c, b, a]), "merge(a,b,c) == merge(c,b,a) byte for byte");
    let m = Archive::from_bytes(abc).unwrap();
    m.verify().unwrap();
    assert_eq!(m.len(), 3);
    assert_eq!(m.devices().unwrap().len(), 2, "both devices present");
    assert_eq!(m.device_for(&nvidia()).unwrap().unwrap().pipeline_count(), 2);
    let lp = m.device_for(&lavapipe()).unwrap().unwrap();
    assert_eq!((lp.pipeline_count(), lp.caches().unwrap().len()), (2, 2));
    for k in [1u128, 2] {
        let (h0, h3) = (nvidia_set(k, 0).hash(), nvidia_set(k, 3).hash());
        let winner = nvidia_set(k, if h0 < h3 { 0 } else { 3 });
        let want: Vec<_> = winner.binaries.iter().map(|b| (b.key.clone(), b.data.bytes().to_vec())).collect();
        assert_eq!(set_bytes(&m, &nvidia(), k).unwrap().1, want);
    }
}

/// An archive merged with the same pipelines carrying driver binaries and cache data (a plain
/// harvest and a device harvest of one script) is the archive with them, byte for byte, in
/// either order; salvage of it keeps every set and cache (the library's half of granary-cli's
/// `ls_merge_and_salvage_carry_device_sections`, which checks the commands around it).
#[test]
fn merge_of_a_plain_archive_and_its_device_harvest_is_the_device_harvest() {
    let plain_entries: Vec<WriteEntry> = (1..=4).map(entry).collect();
    let plain = encode(&plain_entries, &ArchiveMeta::new("device test options"));
    let with = encode(&sample(), &meta());
    for order in [[&plain, &with], [&with, &plain]] {
        let inputs: Vec<Archive> = order.iter().map(|b| Archive::from_bytes((*b).clone()).unwrap()).collect();
        let (e, m) = merge(&inputs).unwrap();
        assert_eq!(encode(&e, &m), with, "merged = the archive with binaries");
    }
    let (e, m, report) = salvage(&with).unwrap();
    assert_eq!((report.devices, report.binary_sets, report.caches), (2, 6, 2));
    assert_eq!(encode(&e, &m), with);
}

/// Offset of the blob whose bytes are `needle` inside `bytes` (a unique pattern).
fn find(bytes: &[u8], needle: &[u8]) -> usize {
    bytes.windows(needle.len()).position(|w| w == needle).expect("pattern present")
}

#[test]
fn a_tampered_binary_never_reaches_the_caller() {
    let mut bytes = encode(&sample(), &meta());
    // Pipeline 2's first binary: 1002 bytes of 0x02.
    let at = find(&bytes, &[2u8; 1002]);
    bytes[at + 500] ^= 0x40;
    let a = Archive::from_bytes(bytes).unwrap();
    let dev = a.device_for(&nvidia()).unwrap().unwrap();
    let p = a.get(PipelineKey(2)).unwrap().unwrap();
    let set = dev.binaries(&p).unwrap().unwrap();
    assert!(matches!(set.get(0), Err(ArchiveError::Corrupt { .. })), "the damaged binary is refused");
    assert!(set.get(1).is_ok(), "the intact dictionary still reads");
    assert!(set.get(3).is_err(), "past the end");
    assert!(matches!(a.verify(), Err(ArchiveError::Corrupt { .. })));
    assert!(p.device_binaries().is_err());
    // A damaged cache blob too.
    let mut bytes = encode(&sample(), &meta());
    let at = find(&bytes, b"lavapipe cache onelavapipe cache one");
    bytes[at] ^= 1;
    let a = Archive::from_bytes(bytes).unwrap();
    assert!(a.device_for(&lavapipe()).unwrap().unwrap().caches().is_err());
    assert!(a.verify().is_err());
}

/// Reads everything device-related, discarding errors: must never panic.
fn read_all(a: &Archive) {
    let _ = a.verify();
    let _ = a.entries();
    let _ = a.meta();
    if let Ok(devs) = a.devices() {
        for d in devs {
            let _ = d.caches();
            for p in a.iter().flatten() {
                if let Ok(Some(set)) = d.binaries(&p) {
                    for b in set.iter() {
                        let _ = b;
                    }
                }
            }
        }
    }
    let _ = a.device_for(&nvidia());
}

#[test]
fn every_flipped_byte_and_every_cut_is_refused_without_a_panic() {
    // Small binaries so the file is small enough to flip every byte.
    let mut w = entry(1);
    w.binaries = vec![
        DeviceBinaries {
            device: nvidia(),
            set: Arc::new(BinarySet {
                flags: 1,
                pipeline_key: Vec::new(),
                binaries: vec![bin(&[1], vec![1; 20]), bin(&[2; 32], vec![2; 17])],
            }),
        },
        DeviceBinaries {
            device: lavapipe(),
            set: Arc::new(BinarySet { flags: 0, pipeline_key: Vec::new(), binaries: vec![] }),
        },
    ];
    let mut m = ArchiveMeta::new("t");
    m.device_caches = vec![DeviceCache { device: lavapipe(), data: Blob::new(vec![7; 24]) }];
    let bytes = encode(&[w, entry(2)], &m);
    Archive::from_bytes(bytes.clone()).unwrap().verify().unwrap();
    for i in 0..bytes.len() {
        for bit in [0x01u8, 0x80] {
            let mut b = bytes.clone();
            b[i] ^= bit;
            if let Ok(a) = Archive::from_bytes(b.clone()) {
                assert!(a.verify().is_err(), "flip {bit:#x} at byte {i} passed verify");
                read_all(&a);
            }
            let _ = salvage(&b);
        }
    }
    for cut in 0..bytes.len() {
        assert!(Archive::from_bytes(bytes[..cut].to_vec()).is_err());
        let _ = salvage(&bytes[..cut]);
    }
}

#[test]
fn an_older_archive_is_refused_naming_its_version() {
    for old in [2u32, 3, 4, 5] {
        let mut bytes = encode(&sample(), &meta());
        bytes[8..12].copy_from_slice(&old.to_le_bytes());
        let e = Archive::from_bytes(bytes.clone()).err().unwrap().to_string();
        assert!(e.contains(&format!("format version {old} is not supported (this granary reads 6)")), "{e}");
        let e = salvage(&bytes).err().unwrap().to_string();
        assert!(e.contains(&format!("format version {old} is not supported (this granary reads 6)")), "{e}");
    }
}

#[test]
fn the_journal_carries_binaries_and_caches() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("j.granary");
    let mut j = Journal::create(&archive, &meta()).unwrap();
    j.append(&[with_binaries(1, 0), entry(4)]).unwrap();
    let second = j.append(&[with_binaries(2, 0)]).unwrap();
    assert!(second < 140_000, "caches are written into one record only: {second}");
    let r = replay_journal(&archive).unwrap().unwrap();
    assert_eq!(r.records, 2);
    let mut want = with_binaries(1, 0).binaries;
    want.sort_by_key(|b| b.device.id());
    assert_eq!(r.entries[0].binaries, want);
    assert!(r.entries[1].binaries.is_empty());
    let mut want = with_binaries(2, 0).binaries;
    want.sort_by_key(|b| b.device.id());
    assert_eq!(r.entries[2].binaries, want);
    assert_eq!(r.device_caches.len(), 2);
    // Continued: caches already held are not written again, and replay still has them.
    let mut j = Journal::reopen(&archive, &meta(), &r).unwrap();
    j.append(&[with_binaries(3, 0)]).unwrap();
    let r = replay_journal(&archive).unwrap().unwrap();
    assert_eq!((r.records, r.device_caches.len()), (3, 2));
    // A set the format cannot hold is refused, not silently dropped.
    let mut bad = entry(9);
    bad.binaries = vec![DeviceBinaries {
        device: nvidia(),
        set: Arc::new(BinarySet { flags: 0, pipeline_key: Vec::new(), binaries: vec![bin(&[1; 33], vec![1])] }),
    }];
    assert!(matches!(j.append(&[bad.clone()]), Err(ArchiveError::Incompatible(_))));
    assert!(matches!(
        write_entries(&dir.path().join("bad.granary"), &[bad], &meta()),
        Err(ArchiveError::Incompatible(_))
    ));
}

#[test]
fn salvage_keeps_intact_binaries_and_reports_dropped_ones() {
    let bytes = encode(&sample(), &meta());
    let (entries, m, report) = salvage(&bytes).unwrap();
    assert!(report.device_data_lost.is_empty(), "{:?}", report.device_data_lost);
    assert_eq!((report.devices, report.binary_sets, report.caches), (2, 6, 2));
    assert_eq!(encode(&entries, &m), bytes, "an intact archive salvages to itself");

    // Damage pipeline 3's first binary: its NVIDIA set is dropped whole, the rest kept.
    let mut bad = bytes.clone();
    let at = find(&bad, &[3u8; 1003]);
    bad[at + 10] ^= 1;
    let (entries, _, report) = salvage(&bad).unwrap();
    assert_eq!(report.recovered, 4);
    assert_eq!(report.binary_sets, 5);
    assert_eq!(report.device_data_lost.len(), 1, "{:?}", report.device_data_lost);
    let p3 = entries.iter().find(|w| w.entry.key.0 == 3).unwrap();
    assert_eq!(p3.binaries.len(), 1);
    assert_eq!(p3.binaries[0].device, lavapipe());
    let p1 = entries.iter().find(|w| w.entry.key.0 == 1).unwrap();
    assert_eq!(p1.binaries.len(), 2);

    // Damage a device record: that device's binary sets and caches are all dropped, the other
    // device's kept, and the loss reported.
    use granary_archive::{Section, DEVICE_RECORD, FIXED_HEADER, SECTION_ROW};
    let row = FIXED_HEADER + (Section::Devices as usize - 1) * SECTION_ROW;
    let table = u64::from_le_bytes(bytes[row + 8..row + 16].try_into().unwrap()) as usize;
    let a = Archive::from_bytes(bytes.clone()).unwrap();
    let lavapipe_first = a.devices().unwrap()[0].identity() == &*lavapipe();
    let mut bad = bytes.clone();
    let victim = if lavapipe_first { 0 } else { 1 };
    bad[table + victim * DEVICE_RECORD + 20] ^= 1;
    let (entries, m, report) = salvage(&bad).unwrap();
    assert_eq!((report.devices, report.binary_sets, report.caches), (1, 3, 0));
    assert!(
        report.device_data_lost[0].starts_with(&format!("device record {victim}")),
        "{:?}",
        report.device_data_lost
    );
    assert!(m.device_caches.is_empty());
    assert!(entries
        .iter()
        .filter(|w| w.entry.key.0 <= 3)
        .all(|w| w.binaries.len() == 1 && w.binaries[0].device == nvidia()));
}

#[test]
fn identity_parse_is_strict() {
    let d = nvidia();
    let b = d.encode();
    assert_eq!(DeviceIdentity::parse(&b).unwrap(), *d);
    assert_eq!(d.id(), granary_archive::content_hash(&b).0);
    assert!(DeviceIdentity::parse(b"garbage garbage garbage garbage garbage garbage").is_err());
    assert!(DeviceIdentity::parse(&[]).is_err());
    let mut t = b.clone();
    t.extend_from_slice(&[0, 0]);
    assert!(DeviceIdentity::parse(&t).is_err());
    let mut long = (*d).clone();
    long.binary_global_key = vec![1; 33];
    assert!(DeviceIdentity::parse(&long.encode()).is_err());
    let mut not_utf8 = b.clone();
    let name_at = find(&not_utf8, b"NVIDIA H200");
    not_utf8[name_at] = 0xff;
    assert!(DeviceIdentity::parse(&not_utf8).unwrap_err().contains("UTF-8"));
    let line = lavapipe().describe();
    assert!(
        line.contains("llvmpipe Mesa 25.0.7 (driver id 13, version 0x601000)") && line.ends_with("binary key none"),
        "{line}"
    );
}
