//! `ParamGuard` on the real sysfs: a haltpoll parameter changed for a scope and restored.

use std::path::Path;
use ticklab_host::harness::sysfs_params::{ParamGuard, ParamSetting, read_param};

#[test]
#[ignore = "needs root and the haltpoll module's parameters (a KVM guest kernel)"]
fn guest_halt_poll_ns_is_set_and_restored() {
    let path = Path::new("/sys/module/haltpoll/parameters/guest_halt_poll_ns");
    let before = read_param(path).expect("haltpoll parameters present");
    let want = if before == "12345" { "23456" } else { "12345" };
    let setting = ParamSetting::parse(&format!("haltpoll.guest_halt_poll_ns={want}")).unwrap();
    {
        let guard = ParamGuard::apply(std::slice::from_ref(&setting)).expect("root");
        assert_eq!(read_param(path).unwrap(), want);
        assert_eq!(guard.changes()[0].1, before);
    }
    assert_eq!(read_param(path).unwrap(), before);
    assert!(!Path::new(ticklab_host::harness::sysfs_params::RESTORE_RECORD).exists());
}
