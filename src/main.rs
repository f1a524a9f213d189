fn main() {
    println!("patchgen");
}
