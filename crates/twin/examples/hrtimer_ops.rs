//! The bench binary of `scripts/hrtimer-callgrind.sh`: runs `ROUNDS` of one hrtimer operation
//! on one timer layout (`ticklab_twin::kernel::hrtimer_bench`) and prints the checksum.
//!
//! Usage: `hrtimer_ops start|cancel|expire active:N|one:N|highest ROUNDS`

use ticklab_twin::kernel::hrtimer_bench::{Layout, Op, run};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: hrtimer_ops start|cancel|expire active:N|one:N|highest ROUNDS";
    if args.len() != 4 {
        eprintln!("{usage}");
        std::process::exit(2);
    }
    let op = match args[1].as_str() {
        "start" => Op::Start,
        "cancel" => Op::Cancel,
        "expire" => Op::Expire,
        other => {
            eprintln!("operation {other:?}: expected start, cancel or expire\n{usage}");
            std::process::exit(2);
        }
    };
    let count = |s: &str| s.parse::<u8>().ok();
    let layout = match args[2].split_once(':') {
        Some(("active", n)) => count(n).map(Layout::ActiveBases),
        Some(("one", n)) => count(n).map(Layout::OneBase),
        None if args[2] == "highest" => Some(Layout::HighestBaseOnly),
        _ => None,
    };
    let rounds = args[3].parse::<u64>().ok();
    match (layout, rounds) {
        (Some(layout), Some(rounds)) => match run(op, layout, rounds) {
            Some(sum) => println!("{sum}"),
            None => {
                eprintln!("layout {:?}: expected 1 to 8 timers\n{usage}", args[2]);
                std::process::exit(2);
            }
        },
        _ => {
            eprintln!(
                "layout {:?} / rounds {:?}: not understood\n{usage}",
                args[2], args[3]
            );
            std::process::exit(2);
        }
    }
}
