use super::*;

#[test]
fn logs() {
    assert_eq!(ceil_log2(1), 0);
    assert_eq!(ceil_log2(8), 3);
    assert_eq!(ceil_log2(9), 4);
    assert_eq!(floor_log2(9), 3);
    assert_eq!(
        instruction_name_of("%fusion.3 = f32[2]{0} fusion(...)", "x"),
        "fusion.3"
    );
    assert_eq!(instruction_name_of("dot.2", ""), "dot.2");
}
