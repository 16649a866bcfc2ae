//! `rigaudit-engine` command line.
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = std::path::PathBuf::from(&args[1]);
    let g = rigaudit_engine::gguf::Gguf::open(&path).unwrap();
    let tk = rigaudit_engine::tokenizer::EngineTokenizer::from_gguf(&g).unwrap();
    let m = rigaudit_engine::model::Model::load(g).unwrap();
    let pool = rigaudit_engine::pool::Pool::new(2);
    let ids = tk.encode_prompt(&args[2]);
    println!("{ids:?}");
    let mut kv = vec![rigaudit_engine::model::KvCache::new(&m.cfg, 2048)];
    let t = std::time::Instant::now();
    let l = m.forward(&pool, &[rigaudit_engine::model::Chunk{slot:0,tokens:&ids,pos:0,all_logits:false,no_logits:false}], &mut kv);
    println!("prefill {} in {:?}", ids.len(), t.elapsed());
    let am = |l: &[f32]| l.iter().enumerate().max_by(|a,b| a.1.partial_cmp(b.1).unwrap()).unwrap().0 as u32;
    if args.len() > 3 {
        let r = m.forward_reference(&ids);
        let a = am(&r); let b = am(&l[0]);
        let md = r.iter().zip(&l[0]).map(|(x,y)| (x-y).abs()).fold(0f32, f32::max);
        println!("ref argmax {a} fast {b} maxdiff {md}");
    }
    let mut tok = am(&l[0]);
    let mut out = vec![tok];
    let mut pos = ids.len();
    let t = std::time::Instant::now();
    for _ in 0..100 {
        let l = m.forward(&pool, &[rigaudit_engine::model::Chunk{slot:0,tokens:&[tok],pos,all_logits:false,no_logits:false}], &mut kv);
        tok = am(&l[0]); pos += 1; out.push(tok);
    }
    println!("decode 100 in {:?}", t.elapsed());
    println!("{}", tk.decode(&out));
}
