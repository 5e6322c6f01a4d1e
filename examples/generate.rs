#![allow(clippy::print_stderr)] // a developer tool: its one line of output is a log
//! Write a synthetic, production-shaped snapshot file for benchmarks; the cluster's make-up is
//! described in `benches/support/cluster.rs`, which `cargo bench` uses directly.
//!
//! `cargo run --release --example generate -- --nodes 5000 --pods 150000 --hosts 100 -o cluster.json`

#[path = "../benches/support/cluster.rs"]
mod cluster;

struct Options {
    shape: cluster::Shape,
    output: String,
    yaml: bool,
}

fn parse_options() -> Options {
    let mut options = Options {
        shape: cluster::Shape::default(),
        output: "cluster.json".to_string(),
        yaml: false,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let value = args.get(i + 1).cloned().unwrap_or_default();
        let number = || value.parse::<usize>().expect("a number");
        match args[i].as_str() {
            "--nodes" => options.shape.nodes = number(),
            "--pods" => options.shape.pods = number(),
            "--hosts" => options.shape.hosts = number(),
            "--seed" => options.shape.seed = number() as u64,
            "--violations" => options.shape.violation_percent = number(),
            "-o" | "--output" => options.output = value,
            "--yaml" => {
                options.yaml = true;
                i -= 1;
            }
            other => panic!("unknown argument {other}"),
        }
        i += 2;
    }
    options
}

fn main() {
    let options = parse_options();
    let generated = cluster::generate(&options.shape);
    let text = if options.yaml {
        generated.yaml()
    } else {
        generated.json()
    };
    std::fs::write(&options.output, text).expect("write the output file");
    eprintln!("{generated} -> {}", options.output);
}
